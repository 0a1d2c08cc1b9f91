"""--tables-dir: every rule's full rows, one CSV or Parquet file per rule."""

from __future__ import annotations

import csv
import json

import polars as pl
import pyarrow as pa
from nsys_diagnose.report.tables import encode

from .cli_harness import assert_one_line_error, call_cli
from .conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"
SMALL_GAPS = ("--set", "gpu-idle-gaps.min_gap_ns=10000")  # hundreds of gaps: beyond the report's 50 rows


def _report_and_tables(tmp_path, fmt):
    tables = tmp_path / "tables"
    r = call_cli(EXPORT, *SMALL_GAPS, "--format", "json", "-o", tmp_path / "r.json", "--tables-dir", tables,
                 "--tables-format", fmt, "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "r.json").read_text()), tables


def test_csv_tables_hold_every_row(tmp_path):
    doc, tables = _report_and_tables(tmp_path, "csv")
    ran = {x["id"]: x for x in doc["rules"] if x["status"] in ("fired", "passed")}
    assert sorted(p.stem for p in tables.iterdir()) == sorted(ran)
    for rule_id, result in ran.items():
        with (tables / f"{rule_id}.csv").open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == result["row_count"], rule_id
        if result["rows"]:
            assert list(rows[0]) == list(result["rows"][0])  # the rule's columns, in order
    gaps = ran["gpu-idle-gaps"]
    assert gaps["row_count"] > len(gaps["rows"]) == 50
    first = next(csv.DictReader((tables / "gpu-idle-gaps.csv").open(newline="")))
    assert int(first["duration_ns"]) == gaps["rows"][0]["duration_ns"]


def test_parquet_tables_keep_types(tmp_path):
    doc, tables = _report_and_tables(tmp_path, "parquet")
    gaps = pl.read_parquet(tables / "gpu-idle-gaps.parquet")
    result = next(x for x in doc["rules"] if x["id"] == "gpu-idle-gaps")
    assert len(gaps) == result["row_count"] > 50
    assert gaps.schema["duration_ns"] == pl.Int64
    assert gaps["duration_ns"].head(50).to_list() == [row["duration_ns"] for row in result["rows"]]


def test_csv_writes_nested_values_as_json():
    table = pa.table({"name": ["a", "b"], "ops": [[1, 2], None]})
    assert encode(table, "csv").decode().splitlines() == ['"name","ops"', '"a","[1, 2]"', '"b",']
    assert encode(table, "parquet")[:4] == b"PAR1"


def test_tables_dir_that_is_a_file(tmp_path):
    target = tmp_path / "tables"
    target.write_text("x")
    r = call_cli(EXPORT, "-o", tmp_path / "r.md", "--tables-dir", target)
    assert_one_line_error(r, target, "--tables-dir must be a folder")


def test_tables_dir_is_for_one_export(tmp_path):
    r = call_cli(FIXTURES / "exports", "-o", tmp_path / "out", "--tables-dir", tmp_path / "t")
    assert_one_line_error(r, "--tables-dir", "works on one export")
