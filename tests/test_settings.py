"""The analysis's settings are declared once (ingest/sql/settings.sql), each with its type, unit,
range and reason and a name that no other setting, rule parameter or compare option has, and each
is read where its row says: by the ingest's SQL through phase_settings or budget_settings, or by
the Python module it names. A run changes them with --set NAME=VALUE, the project's
[tool.nsys-diagnose.settings] or the API's settings=, checked as rule parameters are; a changed
value is in the cache keys that depend on it, a default one leaves them as they were."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner
from nsys_diagnose.analyze import analyze
from nsys_diagnose.cli import cli
from nsys_diagnose.compare.verdict import Settings as CompareSettings
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest import cache_key, database, settings, sql_library
from nsys_diagnose.report_cache import report_key

from .cli_harness import assert_one_line_error, call_cli
from .conftest import FIXTURES, ROOT

EXPORT = FIXTURES / "exports" / "optimizer_launch_bound.sqlite"  # host-bound, GPU busy 6.5 %

DECLARED = settings.declared()
INGEST = ("phase_settings", "budget_settings")


def test_no_two_settings_share_a_name():
    """phase_settings' min_gap_ns (5 us, the GPU's dispatch latency) was also gpu-idle-gaps'
    parameter min_gap_ns (1 ms, the gaps it reports): now dispatch_gap_ns. Its min_steps (3, the
    repetitions that make a loop) was also compare's --min-steps (5, the steps a test needs), and
    both are set on compare's command line: now min_loop_steps."""
    assert len(sql_library.data_rows("settings")) == len(DECLARED)
    params = {name for rule in load_rules().values() for name in rule.params}
    assert not set(DECLARED) & params
    assert not set(DECLARED) & {f.name for f in dataclasses.fields(CompareSettings)}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_setting_is_declared_in_full(name):
    s = DECLARED[name]
    assert s["type"] in ("int", "float") and s["unit"] in ("ns", "%", "count", "ratio") and len(s["why"]) >= 20
    assert s["min"] <= s["value"] and (s["max"] is None or s["value"] <= s["max"])
    assert s["type"] == "float" or s["value"] == int(s["value"])


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_setting_is_read_where_its_row_says(name):
    read_by = DECLARED[name]["read_by"]
    if read_by in INGEST:
        sql = [p.read_text() for p in [*(ROOT / "analyzer" / "ingest" / "sql").glob("*.sql"),
                                        *(ROOT / "rules").glob("*/*.sql")] if p.name != "settings.sql"]
        assert any(f"'{name}'" in text for text in sql), f"no SQL reads {read_by}'s {name}"
    else:
        assert f'"{name}"' in (ROOT / "analyzer" / read_by).read_text()


def test_the_ingest_reads_the_declared_values(empty_trace):
    rows = empty_trace.con.execute("SELECT name, value FROM phase_settings UNION ALL "
                                   "SELECT name, value FROM budget_settings").fetchall()
    assert dict(rows) == {n: s["value"] for n, s in DECLARED.items() if s["read_by"] in INGEST}


def test_explain_lists_the_settings():
    out = CliRunner().invoke(cli, ["explain", "settings"]).output
    assert "  gpu_bound_pct = 80 % (float, 0 to 100; read by budget_settings)" in out.splitlines()
    assert all(f"  {name} = " in out for name in DECLARED)


def _bound(report) -> list[str]:
    return [s.bound for s in report.steady]


def test_a_changed_setting_changes_the_result_and_its_cache_keys(tmp_path):
    """The verdict thresholds are read at ingest (budget_settings): at 5 % and 6 % the 6.5 %-busy
    loop is gpu-bound. The changed run gets its own ingest and report entries; the default run
    before and after it is served from the default entries."""
    cache = tmp_path / "cache"
    base = analyze(EXPORT, cache_dir=cache)
    assert _bound(base) == ["host-bound"] and base.headline.startswith("Host-bound")
    tuned = {"host_bound_pct": 5, "gpu_bound_pct": 6}
    changed = analyze(EXPORT, cache_dir=cache, settings=tuned)
    assert not changed.input.from_cache and not changed.input.report_from_cache
    assert _bound(changed) == ["gpu-bound"] and changed.headline.startswith("Kernel-bound (GPU busy 6.5 %)")
    assert len(list(cache.glob("*.duckdb"))) == 2
    trace = database.open_trace(EXPORT, cache_dir=cache, settings=tuned)
    try:  # the changed run's tables hold its values
        assert trace.from_cache
        read = dict(trace.con.execute("SELECT name, value FROM budget_settings").fetchall())
        assert read == {n: settings.default(n) for n in read} | tuned
    finally:
        trace.close()
    again = analyze(EXPORT, cache_dir=cache)
    assert again.input.from_cache and again.input.report_from_cache and again.headline == base.headline
    # a value equal to its default is no change: the default entries
    same = analyze(EXPORT, cache_dir=cache, settings={"gpu_bound_pct": 80})
    assert same.input.report_from_cache and same.headline == base.headline


def test_a_setting_read_by_python_changes_the_report_key_only(tmp_path):
    """critical_path_min_pct is read after the ingest (engine/claims.py): the tables are the
    default run's, the report is another (at 100 % every warning becomes a note)."""
    cache = tmp_path / "cache"
    base = analyze(EXPORT, cache_dir=cache)
    tuned = {"critical_path_min_pct": 100}
    assert cache_key.content_key(EXPORT, cache, tuned) == cache_key.content_key(EXPORT, cache)
    assert report_key(EXPORT, {}, {}, None, "auto", False, cache, tuned) != report_key(EXPORT, {}, {}, None, "auto",
                                                                                          False, cache)
    notes = analyze(EXPORT, cache_dir=cache, settings=tuned)
    assert notes.input.from_cache and not notes.input.report_from_cache
    assert any(f.severity == "warning" for f in base.findings) and base.findings[0].severity == "warning"
    assert all(f.severity == "info" for f in notes.findings if f.claim)


def test_set_and_the_project_config_set_a_setting(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.nsys-diagnose.settings]\ngpu_bound_pct = 6\n"
                                             "host_bound_pct = 5\n")
    monkeypatch.chdir(tmp_path)
    r = call_cli(EXPORT, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0 and [s["bound"] for s in json.loads(r.stdout)["steady"]] == ["gpu-bound"]
    r = call_cli(EXPORT, "--format", "json", "--fail-on", "never", "--set", "gpu_bound_pct=80", "--set",
                 "host_bound_pct=50")  # flags win
    assert r.returncode == 0 and [s["bound"] for s in json.loads(r.stdout)["steady"]] == ["host-bound"]
    out = call_cli("explain", "settings").stdout
    assert f"  gpu_bound_pct = 6 % (float, 0 to 100; read by budget_settings; default 80, set in " \
           f"{tmp_path / 'pyproject.toml'} [tool.nsys-diagnose])" in out.splitlines()
    assert "  host_ahead = 0.25 ratio (float, 0 to 1; read by compare/comparison.py)" in out.splitlines()


@pytest.mark.parametrize(("value", "problem"), [
    ("nan", "not a finite number"), ("inf", "not a finite number"), ("-1e400", "not a finite number"),
    ("101", "above the largest allowed value 100 %"), ("-1", "below the smallest allowed value 0 %"),
    ("lots", "is not a valid float")])
def test_a_bad_value_is_one_line_before_any_work(value, problem, tmp_path):
    r = call_cli(EXPORT, "--cache-dir", tmp_path, "--set", f"gpu_bound_pct={value}")
    assert_one_line_error(r, f"gpu_bound_pct={value}", problem)
    assert not list(tmp_path.iterdir())  # refused before the ingest


@pytest.mark.parametrize(("arg", "problem"), [
    ("min_loop_steps=1e30", "outside the 64-bit integer range"), ("min_loop_steps=2.5", "not a whole number"),
    ("min_loop_steps=1", "below the smallest allowed value 2"), ("min_steps=3", "no setting 'min_steps'"),
    ("nope", "expected ID.PARAM=VALUE")])
def test_a_bad_setting_is_one_line(arg, problem):
    assert_one_line_error(call_cli(EXPORT, "--set", arg), arg, problem)


@pytest.mark.parametrize(("toml", "problem"), [
    ("gpu_bound_pct = nan", "settings 'gpu_bound_pct': nan is not a valid float"),
    ("gpu_bound_pct = 1e999", "inf is not a valid float"),
    ('gpu_bound_pct = "high"', "'high' is not a valid float"), ("bogus = 1", "no setting 'bogus'"),
    ("gpu_bound_pct = true", "bool is not a valid float"), ("min_loop_steps = 2.5", "is not a valid int")])
def test_a_bad_setting_in_the_config_names_the_file(toml, problem, tmp_path, monkeypatch):
    config = tmp_path / "pyproject.toml"
    config.write_text(f"[tool.nsys-diagnose.settings]\n{toml}\n")
    monkeypatch.chdir(tmp_path)
    for args in ([EXPORT], ["explain", "settings"]):
        line = assert_one_line_error(call_cli(*args), config, problem)
        assert "[tool.nsys-diagnose] settings" in line


def test_the_api_checks_its_settings(tmp_path):
    from nsys_diagnose.errors import UsageError

    with pytest.raises(UsageError, match="settings 'gpu_bound_pct': nan is not a valid float"):
        analyze(EXPORT, cache_dir=tmp_path, settings={"gpu_bound_pct": float("nan")})
    assert not list(tmp_path.iterdir())
