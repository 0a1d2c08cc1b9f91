"""--tables-dir: every rule's full result rows, one file per rule (as `nsys stats -f csv` writes
one per report), where the Markdown and JSON reports keep the first rows_limit of them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from nsys_diagnose.engine.model import Report, Rule
from nsys_diagnose.engine.runner import plain
from nsys_diagnose.engine.tables import rule_table
from nsys_diagnose.output import write_atomic
from nsys_diagnose.text import spreadsheet_cell


def _flat(table: pa.Table) -> pa.Table:
    """CSV has no lists or structs: such columns become JSON text (Parquet keeps them). Text
    that a spreadsheet would run as a formula is defused (text.spreadsheet_cell)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            text = [None if v is None else json.dumps(plain(v), ensure_ascii=False, default=str)
                    for v in table.column(i).to_pylist()]
        elif pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            text = table.column(i).to_pylist()
        else:
            continue
        table = table.set_column(i, f.name, pa.array([None if v is None else spreadsheet_cell(v) for v in text],
                                                     pa.string()))
    return table


def encode(table: pa.Table, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "csv":
        pa_csv.write_csv(_flat(table), buf)
    else:
        pq.write_table(table, buf)
    return buf.getvalue()


def write_tables(con: duckdb.DuckDBPyConnection, report: Report, rules: dict[str, Rule],
                 overrides: dict[str, dict[str, Any]], folder: Path, fmt: str = "csv") -> list[Path]:
    """<folder>/<rule id>.<fmt> for each rule that ran (fired or passed; a rule with no rows gets
    its header). Skipped and failed rules have no rows and get no file. Returns the files written."""
    written = []
    for result in report.rules:
        if result.status not in ("fired", "passed"):
            continue
        path = folder / f"{result.id}.{fmt}"
        write_atomic(path, encode(rule_table(con, rules[result.id], overrides.get(result.id)), fmt))
        written.append(path)
    return written
