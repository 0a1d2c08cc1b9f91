"""No rule makes a report without end (issue 18, class 4): values, messages and rows are capped in
bytes and marked where cut (limits.py, engine/bounds.py); a message's format cannot ask for a
gigabyte of padding; rendering counts against the rule's time limit."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from nsys_diagnose import limits
from nsys_diagnose.engine import runner
from nsys_diagnose.engine.catalog import load_rule, load_rules
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.units import render

from .cli_harness import call_cli, only_wrote
from .conftest import FIXTURES
from .test_security import rule_yaml

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"


def user_rule(folder: Path, rule_id: str, sql: str, message: str = "hit {x}", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = rule_yaml(rule_id).replace("docs:", f"findings: [{{when: 'true', message: {json.dumps(message)}}}]\n{extra}docs:")
    (folder / f"{rule_id}.yaml").write_text(text)
    (folder / f"{rule_id}.sql").write_text(sql)
    return folder / f"{rule_id}.yaml"


_INGESTED: list[Path] = []


def report_with(tmp_path: Path, rule_id: str, sql: str, message: str = "hit {x}", extra: str = "",
                fmt: str = "json") -> tuple[str, float, Path]:
    """The report of one user rule on EXPORT, in a cache of its own (reports/ then holds only it);
    the ingest is copied from the first test's, so that it is done once."""
    user_rule(tmp_path / "rules", rule_id, sql, message, extra)
    out = tmp_path / f"report.{fmt}"
    cache = tmp_path / "cache"
    cache.mkdir()
    for f in _INGESTED[0].glob("*.duckdb*") if _INGESTED else ():
        shutil.copy2(f, cache / f.name)
    started = time.monotonic()
    r = call_cli(EXPORT, "--rules", tmp_path / "rules", "--select", rule_id, "--format", fmt, "-o", out,
                 "--fail-on", "never", "--cache-dir", cache, timeout=60)
    assert r.returncode == 0 and only_wrote(r.stderr), r.stderr[-2000:]
    if not _INGESTED:
        _INGESTED.append(cache)
    return out.read_text(), time.monotonic() - started, cache


def test_a_100_mb_value_makes_a_small_report_and_cache_entry(tmp_path):
    """Two lines of YAML and SQL used to write 500 MB: the value in the message, the evidence and
    the rows, and as much again into the report cache."""
    text, seconds, cache = report_with(tmp_path, "huge-value", "SELECT repeat('x', 100000000) AS x")
    assert len(text.encode()) < 600_000
    rule = next(r for r in json.loads(text)["rules"] if r["id"] == "huge-value")
    (finding,) = rule["findings"]
    value = finding["evidence"]["x"]
    assert value.startswith("xxxx") and value.endswith("[truncated: 100,000,000 bytes in all]")
    assert len(value.encode()) <= limits.MAX_VALUE_BYTES and rule["rows"][0]["x"] == value
    assert len(finding["message"].encode()) <= limits.MAX_MESSAGE_BYTES and "truncated" in finding["message"]
    assert sum(p.stat().st_size for p in (cache / "reports").iterdir()) < 600_000
    assert seconds < 30


def test_large_values_of_other_types_are_replaced_by_a_marker(tmp_path):
    text, _, _ = report_with(tmp_path, "huge-list",
                             "SELECT range(3000000) AS x, repeat('\\xAA'::BLOB, 300000) AS b, 7 AS n")
    (row,) = next(r for r in json.loads(text)["rules"] if r["id"] == "huge-list")["rows"]
    assert row["x"].startswith("[bigint[] of ") and row["x"].endswith("bytes: too large to keep]")
    assert row["b"].startswith("[blob of 1,200,000 bytes") and row["n"] == 7


def test_a_huge_format_width_is_a_rule_error_at_once(tmp_path):
    """{x:>300000000} ran past two minutes writing gigabytes."""
    text, seconds, _ = report_with(tmp_path, "wide", "SELECT 1 AS x", message="{x:>300000000}")
    rule = next(r for r in json.loads(text)["rules"] if r["id"] == "wide")
    assert rule["status"] == "error" and "format width or precision 300,000,000 is above 1,000" in rule["reason"]
    assert seconds < 30


def test_many_long_rows_stay_within_the_rule_budget(tmp_path):
    text, _, _ = report_with(tmp_path, "many-rows", "SELECT range AS i, repeat('y', 10000) AS x FROM range(20000)",
                             extra="rows_limit: 1000000\n")
    rule = next(r for r in json.loads(text)["rules"] if r["id"] == "many-rows")
    assert rule["row_count"] == 20_000 and 0 < len(rule["rows"]) < 500
    assert len(json.dumps(rule).encode()) <= limits.MAX_RULE_BYTES + 100_000


def test_a_template_repeating_a_long_value_stops_at_the_cap():
    started = time.monotonic()
    message = render("{x}" * 200_000, {"x": "z" * 100_000})
    assert len(message.encode()) <= limits.MAX_MESSAGE_BYTES and message.endswith("bytes in all]")
    assert time.monotonic() - started < 5


def test_the_markdown_and_html_reports_stay_small_too(tmp_path):
    for fmt in ("md", "html"):
        text, _, _ = report_with(tmp_path / fmt, "huge-value", "SELECT repeat('x', 100000000) AS x", fmt=fmt)
        assert len(text.encode()) < 1_500_000, fmt


@pytest.fixture(scope="module")
def trace():
    t = open_trace(EXPORT, use_cache=False)
    yield t
    t.close()


def test_rendering_counts_against_the_rule_time_limit(trace, tmp_path, monkeypatch):
    rule = load_rule(user_rule(tmp_path, "slow-render", "SELECT range AS x FROM range(50)", extra=""))
    monkeypatch.setenv("NSYS_DIAGNOSE_RULE_TIMEOUT_S", "0.5")

    def slow(template, row, limit=limits.MAX_MESSAGE_BYTES):
        time.sleep(0.1)
        return render(template, row, limit)

    monkeypatch.setattr(runner, "render", slow)
    started = time.monotonic()
    result = runner.run_rule(trace.con, rule, {}, trace.captured)
    assert result.status == "error" and "while rendering its findings" in result.reason
    assert time.monotonic() - started < 2


def test_a_long_error_reason_is_cut(trace, tmp_path):
    rule = load_rule(user_rule(tmp_path, "long-error", "SELECT CAST(repeat('q', 1000000) AS INTEGER) AS x"))
    result = runner.run_rule(trace.con, rule, {}, trace.captured)
    assert result.status == "error" and len(result.reason.encode()) <= limits.MAX_REASON_BYTES


def test_rules_side_by_side_give_the_results_of_one_at_a_time(trace):
    rules = list(load_rules().values())
    together = runner.run_rules(trace.con, rules, {}, trace.captured)
    alone = [runner.run_rule(trace.con, r, {}, trace.captured) for r in rules]
    assert [r.id for r in together] == [r.id for r in rules]
    assert [r.model_dump(exclude={"seconds"}) for r in together] == [r.model_dump(exclude={"seconds"}) for r in alone]


def test_an_interrupt_stops_the_rules_already_running(trace, tmp_path, monkeypatch):
    """Ctrl-C while rules run side by side: the running ones are interrupted too, not left to
    their time limit, and the queued ones never start."""
    monkeypatch.setenv("NSYS_DIAGNOSE_RULE_TIMEOUT_S", "60")
    quick = load_rule(user_rule(tmp_path, "quick", "SELECT 1 AS x"))
    endless = load_rule(user_rule(tmp_path, "endless", "SELECT count(*) AS x FROM range(1000000) a, range(1000000) b"))

    def stop(n, rule):
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.run_rules(trace.con, [quick, endless, endless], {}, trace.captured, on_done=stop)
    assert time.monotonic() - started < 10
