"""Parameters and environment (issue 18, class 6): every `--set` value is checked against its
declared type and range, a rule's defaults against their own; environment values are parsed,
never pasted into SQL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.params import convert, declared_range, parse_overrides
from nsys_diagnose.errors import UsageError
from nsys_diagnose.ingest import environment
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.ingest.environment import memory_limit, thread_config

from .cli_harness import assert_one_line_error, call_cli
from .conftest import FIXTURES

RULES = load_rules()
EXPORT = FIXTURES / "exports" / "compute_fp32.sqlite"


@pytest.mark.parametrize("pair, needle", [
    ("gpu-idle-gaps.min_gap_ns=1e400", "not a valid int"),          # was an internal OverflowError
    ("gpu-idle-gaps.min_gap_ns=inf", "not a valid int"),
    ("gpu-idle-gaps.min_gap_ns=nan", "not a valid int"),
    ("gpu-idle-gaps.min_gap_ns=-1", "below the smallest allowed value 0 ns"),
    ("gpu-idle-gaps.min_gap_ns=2.5", "not a whole number"),
    ("gpu-idle-gaps.min_gap_ns=1e30", "64-bit"),
    ("hot-kernels.min_share_pct=nan", "not a finite number"),       # was accepted: the rule never fired
    ("hot-kernels.min_share_pct=-inf", "not a finite number"),
    ("hot-kernels.min_share_pct=1e400", "not a finite number"),
    ("hot-kernels.min_share_pct=-0.1", "below the smallest allowed value 0 %"),
    ("hot-kernels.min_share_pct=100.5", "above the largest allowed value 100 %"),
    ("hot-kernels.top_n=-3", "below the smallest allowed value 0 count"),
    ("fp32-gemm.expected_speedup=-4", "below the smallest"),
    ("hot-kernels.min_share_pct=", "not a valid float"),
])
def test_bad_values_are_usage_errors(pair, needle):
    with pytest.raises(UsageError, match="--set") as err:
        parse_overrides([pair], RULES)
    assert needle in str(err.value)


def test_good_values_keep_their_types():
    got = parse_overrides(["gpu-idle-gaps.min_gap_ns=2e6", "gpu-idle-gaps.min_gap_ns=1_000", "hot-kernels.min_share_pct=0",
                           "hot-kernels.min_share_pct=100", "hot-kernels.top_n=5"], RULES)
    assert got == {"gpu-idle-gaps": {"min_gap_ns": 1000}, "hot-kernels": {"min_share_pct": 100.0, "top_n": 5}}
    assert convert("yes", "bool", "x") is True and convert(" a, b ,", "list", "x") == ["a", "b"]


def test_ranges_come_from_the_unit_unless_declared():
    p = RULES["hot-kernels"].params["min_share_pct"]
    assert declared_range(p) == (0, 100)
    assert declared_range(p.model_copy(update={"max": 400.0})) == (0, 400.0)
    assert declared_range(RULES["gpu-idle-gaps"].params["min_gap_ns"]) == (0, None)


def test_every_built_in_default_is_in_its_own_range():
    from nsys_diagnose.engine.params import check_default
    assert not [(r.id, n) for r in RULES.values() for n, p in r.params.items() if check_default(p)]


def test_the_cli_refuses_a_bad_value_in_one_line():
    r = call_cli(EXPORT, "--set", "gpu-idle-gaps.min_gap_ns=1e400")
    assert_one_line_error(r, "", "--set 'gpu-idle-gaps.min_gap_ns=1e400'", "not a valid int")


def test_the_memory_limit_is_parsed_and_a_crafted_value_writes_nothing(tmp_path, monkeypatch):
    """The value used to be pasted into `SET memory_limit = '...'`: a quote and a COPY wrote a file."""
    canary = tmp_path / "pwned.csv"
    monkeypatch.setenv("NSYS_DIAGNOSE_MEMORY_LIMIT", f"500MB'; COPY (SELECT 1 AS x) TO '{canary}'; SELECT '1")
    r = call_cli(EXPORT, "--no-cache", "--fail-on", "never")
    assert_one_line_error(r, "", "NSYS_DIAGNOSE_MEMORY_LIMIT", "expected a size")
    with pytest.raises(UsageError):
        open_trace(EXPORT, use_cache=False)
    assert not canary.exists()
    for raw, parsed in (("2GB", "2GB"), (" 1.5 gib ", "1.5GiB"), ("700000000", "700000000B"), ("64mib", "64MiB")):
        monkeypatch.setenv("NSYS_DIAGNOSE_MEMORY_LIMIT", raw)
        assert memory_limit() == parsed
    for bad in ("0", "-1GB", "lots", "1e9", "2 GB 3", "", "1GB;", "64kb", "1KB", "67MB"):  # DuckDB needs 64 MiB
        monkeypatch.setenv("NSYS_DIAGNOSE_MEMORY_LIMIT", bad)
        with pytest.raises(UsageError, match="NSYS_DIAGNOSE_MEMORY_LIMIT"):
            memory_limit()
    monkeypatch.delenv("NSYS_DIAGNOSE_MEMORY_LIMIT")
    assert memory_limit() == environment.MEMORY_LIMIT


def test_the_memory_limit_reaches_duckdb(monkeypatch):
    monkeypatch.setenv("NSYS_DIAGNOSE_MEMORY_LIMIT", "321MB")
    trace = open_trace(EXPORT, use_cache=False)
    try:
        setting = trace.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    finally:
        trace.close()
    assert setting.replace(" ", "") in ("306.1MiB", "321.0MB", "306.1MB")  # DuckDB prints it its way


@pytest.mark.parametrize("raw", ["\u00b2", "0", "-2", "99999", "4.0", " "])
def test_thread_counts_are_whole_numbers_in_range(raw, monkeypatch):
    monkeypatch.setenv("NSYS_DIAGNOSE_THREADS", raw)
    with pytest.raises(UsageError, match="NSYS_DIAGNOSE_THREADS"):
        thread_config()


def test_relative_xdg_cache_home_is_ignored(monkeypatch):
    monkeypatch.delenv("NSYS_DIAGNOSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert environment.default_cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "nsys-diagnose"


@pytest.mark.parametrize("value, needle", [(float("nan"), "not a valid float"), (-5, "below the smallest"),
                                           (150.0, "above the largest"), (True, "not a valid float")])
def test_typed_values_from_a_config_or_the_api_are_checked_alike(value, needle):
    from nsys_diagnose.engine.selection import overrides_from
    with pytest.raises(UsageError, match=needle):
        overrides_from({"hot-kernels.min_share_pct": value}, RULES, origin="pyproject.toml params")
