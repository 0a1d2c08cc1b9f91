"""The library: nsys_diagnose.open() -> Trace -> Analysis, polars frames, and docs/notebook.md run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import nsys_diagnose
import polars as pl
import pytest
from nsys_diagnose.engine.model import Report
from nsys_diagnose.errors import DiagnoseError, UsageError

from .conftest import FIXTURES, ROOT

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"


@pytest.fixture(scope="module")
def trace():
    with nsys_diagnose.open(EXPORT) as t:
        yield t


@pytest.fixture(scope="module")
def analysis(trace):
    return trace.analyze()


def test_package_import_loads_neither_polars_nor_duckdb():
    code = "import sys, nsys_diagnose; print(sorted(m for m in ('polars', 'duckdb', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_help_does_not_import_the_library():
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "nsys_diagnose", "--help"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines()}
    assert not {"polars", "nsys_diagnose.api", "rich.markdown"} & imported


def test_tables_table_and_sql(trace):
    tables = trace.tables()
    assert tables.columns == ["name", "kind", "rows", "columns", "captured"]
    kernels = tables.row(by_predicate=pl.col("name") == "kernels", named=True)
    assert kernels["captured"] is True and kernels["kind"] == "table"
    frame = trace.table("kernels")
    assert isinstance(frame, pl.DataFrame) and len(frame) == kernels["rows"] > 0
    assert {"name", "start_ns", "duration_ns", "device_id", "pid"} <= set(frame.columns)
    top = trace.sql("SELECT count(*) AS n FROM kernels WHERE duration_ns >= $min", {"min": 0})
    assert top["n"][0] == len(frame)


def test_unknown_table_and_write_attempts_are_refused(trace):
    with pytest.raises(UsageError, match="no table 'nope'"):
        trace.table("nope")
    with pytest.raises(Exception, match="(?i)read-only|read only"):
        trace.sql("CREATE TABLE x AS SELECT 1")


def test_findings_df_follows_the_report(analysis):
    df = analysis.findings_df()
    report = analysis.report
    assert isinstance(report, Report) and len(df) == len(report.findings) > 0
    assert df["rank"].to_list() == list(range(1, len(df) + 1))
    assert df["rule_id"].to_list() == [f.rule_id for f in report.findings]
    assert df["impact_ns"].dtype == pl.Int64 and "evidence_json" in df.columns
    assert set(analysis.rules_df()["status"]) <= {"fired", "passed", "skipped", "error"}


def test_rule_rows_has_every_row_beyond_the_report_cap(trace):
    r = trace.analyze(select=["gpu-idle-gaps"], params={"gpu-idle-gaps.min_gap_ns": 10_000})
    result = r.report.rules[0]
    assert result.row_count > len(result.rows) == 50  # the report's cap
    rows = r.rule_rows("gpu-idle-gaps")
    assert len(rows) == result.row_count
    assert rows.head(50)["start_ns"].to_list() == [x["start_ns"] for x in result.rows]
    assert rows is r.rule_rows("gpu-idle-gaps")  # read once


def test_select_by_category_ignore_and_severity(trace):
    r = trace.analyze(select=["memory"], ignore=["allocation-churn"], severity={"memory-headroom": "error"})
    ran = {x.id for x in r.report.rules}
    assert ran == {"memory-headroom", "pageable-memcpy", "transfer-share"}
    raised = [f for f in r.report.findings if f.rule_id == "memory-headroom"]
    assert raised and all(f.severity == "error" for f in raised)  # an info finding, raised
    assert r.report.findings[0].rule_id == "memory-headroom"  # and ranked first for it


@pytest.mark.parametrize("kwargs,needle", [
    ({"select": ["nope"]}, "no rule or category 'nope'"),
    ({"params": {"hot-kernels.nope": 1}}, "has no parameter 'nope'"),
    ({"params": {"gpu-idle-gaps.min_gap_ns": "soon"}}, "is not a valid int"),
    ({"params": {"gpu-idle-gaps.min_gap_ns": 1.5}}, "is not a valid int"),
    ({"severity": {"hot-kernels": "fatal"}}, "severity must be one of"),
])
def test_bad_arguments_raise_usage_errors(trace, kwargs, needle):
    with pytest.raises(UsageError, match=re.escape(needle)):
        trace.analyze(**kwargs)


def test_nested_params_equal_dotted_params(trace):
    a = trace.analyze(select=["hot-kernels"], params={"hot-kernels": {"top_n": 3}})
    b = trace.analyze(select=["hot-kernels"], params={"hot-kernels.top_n": 3})
    assert a.overrides == b.overrides == {"hot-kernels": {"top_n": 3}}


def test_rule_rows_errors(analysis):
    with pytest.raises(UsageError, match="was not run"):
        analysis.rule_rows("no-such-rule")


def test_closed_trace(tmp_path):
    t = nsys_diagnose.open(EXPORT, use_cache=False)
    temp_db = t._trace._cleanup.path  # the private folder of a --no-cache trace
    assert temp_db.exists()
    r = t.analyze(select=["hot-kernels"])
    with t:
        pass
    assert t.closed and not temp_db.exists()
    t.close()  # idempotent
    assert "closed" in repr(t)
    with pytest.raises(DiagnoseError, match="closed"):
        t.tables()
    with pytest.raises(DiagnoseError, match="closed"):
        r.rule_rows("hot-kernels")
    assert len(r.findings_df()) == len(r.report.findings)  # the report outlives the trace


def test_budget_df_reads_the_budget(analysis):
    report = analysis.report
    assert report.budget, "the export has a steady state, so a budget"
    df = analysis.budget_df()
    assert len(df) == len(report.budget) and {"device_id", "pid", "kind", "cause", "ns", "pct"} <= set(df.columns)
    assert df["ns"].dtype == pl.Int64
    steady = analysis.steady_df()
    for s in report.steady:  # a (device, pid)'s slices add up to its steady-state window
        assert df.filter((pl.col("pid") == s.pid) & (pl.col("device_id") == s.device_id))["ns"].sum() == s.window_ns
    assert len(steady) == len(report.steady)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty = nsys_diagnose.Analysis(analysis.trace, report.model_copy(update={"budget": []}),
                                       analysis.rules, analysis.overrides).budget_df()
    assert empty.is_empty() and empty.columns == df.columns  # typed columns even without rows


def test_budget_df_of_a_report_without_a_budget(analysis):
    from pydantic import BaseModel

    class OlderReport(BaseModel):  # a Report from before the budget
        headline: str = "h"
        findings: list = []

    older = nsys_diagnose.Analysis(analysis.trace, OlderReport(), analysis.rules, analysis.overrides)
    with pytest.warns(UserWarning, match="no step-time budget"):
        assert older.budget_df().is_empty()


def test_to_pandas(analysis, monkeypatch):
    frame = analysis.findings_df()
    if _has_pandas():
        assert len(nsys_diagnose.to_pandas(frame)) == len(frame)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if it were not installed
    with pytest.raises(UsageError, match=re.escape('pip install "nsys-diagnose[pandas]"')):
        nsys_diagnose.to_pandas(frame)


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
        return True
    except ImportError:
        return False


def test_notebook_runs_as_written(monkeypatch, capsys):
    """From the repository alone: its export is in fixtures/exports/, not in ../shared."""
    text = (ROOT / "docs" / "notebook.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 8
    assert "../shared" not in text
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for i, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/notebook.md block {i}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "launch overhead" in out and "gaps, 50 of them in the report" in out
    assert namespace["t"].closed
    assert os.path.samefile(namespace["path"], FIXTURES / "exports" / "optimizer_launch_bound.sqlite")
