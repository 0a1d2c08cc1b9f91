"""The report cache (analyzer/report_cache.py): a repeat run is answered without a query, and
anything that could change the report (the export, a rule parameter, --select) misses it."""

from __future__ import annotations

import shutil
import subprocess
import sys

from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest import database
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.report import markdown

from .conftest import FIXTURES

SRC = FIXTURES / "exports" / "compute_fp32.sqlite"


def findings(report):
    return [(f.rule_id, f.message) for f in report.findings]


def test_a_repeat_run_is_read_back_without_opening_the_trace(tmp_path, monkeypatch):
    first = analyze(SRC, cache_dir=tmp_path)
    assert list((tmp_path / "reports").glob("*.json"))

    def no_open(*a, **k):
        raise AssertionError("a cached report must not open the trace")

    monkeypatch.setattr(database, "with_trace", no_open)
    second = analyze(SRC, cache_dir=tmp_path)
    assert second.input.report_from_cache and second.input.from_cache
    assert findings(second) == findings(first) and second.headline == first.headline
    assert second.metrics == first.metrics
    # the Markdown report is the same too: its tables' columns (not in the JSON) come back with it
    assert [r.display for r in second.rules] == [r.display for r in first.rules]
    assert markdown.render(second) == markdown.render(first)


def test_the_timeline_survives_the_cache(tmp_path):
    first = analyze(SRC, cache_dir=tmp_path, timeline=True)
    second = analyze(SRC, cache_dir=tmp_path, timeline=True)
    assert second.input.report_from_cache and second.timeline == first.timeline
    assert analyze(SRC, cache_dir=tmp_path).timeline is None  # a separate entry, without it


def test_parameters_select_and_content_each_miss_the_cache(tmp_path):
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(SRC, copy)
    cache = tmp_path / "cache"
    base = analyze(copy, cache_dir=cache)
    strict = analyze(copy, cache_dir=cache, overrides={"hot-kernels": {"min_share_pct": 99.9}})
    assert strict.input.from_cache and not strict.input.report_from_cache  # same tables, new report
    selected = analyze(copy, cache_dir=cache, select=["hot-kernels"])
    assert not selected.input.report_from_cache and {r.id for r in selected.rules} == {"hot-kernels"}
    assert analyze(copy, cache_dir=cache).input.report_from_cache
    # another export at the same path: a new content key, so a fresh analysis
    shutil.copyfile(FIXTURES / "exports" / "dataloader_bound.sqlite", copy)
    other = analyze(copy, cache_dir=cache)
    assert not other.input.from_cache and not other.input.report_from_cache and findings(other) != findings(base)


def test_no_cache_writes_no_report(tmp_path, monkeypatch):
    monkeypatch.setenv("NSYS_DIAGNOSE_CACHE_DIR", str(tmp_path))
    analyze(SRC, use_cache=False)
    assert not (tmp_path / "reports").exists()


def test_connections_draw_no_progress_bar():
    # DuckDB draws its progress bar on stdout: it would corrupt a JSON report piped there
    trace = open_trace(SRC, use_cache=False)
    try:
        assert trace.con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
    finally:
        trace.close()


def test_a_repeat_run_imports_no_duckdb(tmp_path):
    """A report cache hit needs no query: importing DuckDB would be a fifth of the repeat run."""
    probe = ("import atexit, sys; atexit.register(lambda: print('duckdb' in sys.modules, file=sys.stderr)); "
             "from nsys_diagnose.main import main; sys.argv[0] = 'nsys-diagnose'; main()")
    command = [sys.executable, "-c", probe, str(SRC), "--cache-dir", str(tmp_path), "-o", str(tmp_path / "r.md"),
               "--fail-on", "never"]
    first, second = (subprocess.run(command, capture_output=True, text=True, timeout=120) for _ in range(2))
    assert first.returncode == 0 and first.stderr.splitlines()[-1] == "True", first.stderr
    assert second.returncode == 0 and second.stderr.splitlines()[-1] == "False", second.stderr
    assert (tmp_path / "r.md").read_text()
