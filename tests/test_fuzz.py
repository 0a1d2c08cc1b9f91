"""A bounded fuzz test: damaged copies of a real export and of the synthetic corpus (tests/mutate.py:
bit flips, truncation, garbage pages, header fields, values of other types, NULLs, duplicated
ids, renamed or dropped tables and columns), each through the CLI. Whatever the damage, the run
ends within its timeout with a report (exit 0; JSON, Markdown, HTML or a CI format, and the rules'
tables as CSV or Parquet, by seed) or one line on stderr (exit 2): never a traceback, an
"internal error" or a hang, and never a change to the input or a file beside it. `compare` meets
them too, in each of its formats (Markdown, JSON, JUnit), against the intact export.

Seeded, so a failure names its seed and reproduces: `mutant(source, out, seed)`. 29 cases in four
groups (so pytest-xdist spreads them) and 12 compare cases in two, about 25 s on two cores; seeds
that once found a bug are kept in REGRESSIONS. (Many more seeds were run once, 0 to 150 and 1000 to 1150.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cli_harness import call_cli, leftovers, snapshot
from .conftest import FIXTURES
from .mutate import mutant
from .synth import write_export
from .test_bad_inputs import corpus_tables

GROUPS, PER_GROUP = 4, 7
FORMATS = ["json", "md", "html", "github", "sarif", "junit"]  # each renderer meets the damage too
TABLE_FORMATS = ["csv", "parquet"]
STARTS = {"md": "# nsys-diagnose", "html": "<!DOCTYPE html>", "github": "::", "sarif": "{", "junit": "<?xml"}
REGRESSIONS = [1001]  # a bit flip that made a table's name a blob in sqlite_master


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("fuzz-sources")
    return [FIXTURES / "exports" / "compute_fp32.sqlite", write_export(corpus_tables(), folder / "corpus.sqlite")]


def seeds(group: int) -> list[int]:
    base = list(range(group * PER_GROUP, (group + 1) * PER_GROUP))
    return base + (REGRESSIONS if group == 0 else [])


@pytest.mark.parametrize("group", range(GROUPS))
def test_damaged_exports_give_a_report_or_one_line(group, sources, tmp_path):
    cache = tmp_path / "cache"
    for seed in seeds(group):
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        path = folder / "damaged.sqlite"
        what = mutant(sources[seed % 2], path, seed)
        before = snapshot(folder)
        reader = "sqlite3" if seed % 3 == 0 else "auto"
        fmt = FORMATS[seed % len(FORMATS)]
        tables = tmp_path / f"tables-{seed}"  # the rules' tables too, csv or parquet by seed
        r = call_cli(path, "--format", fmt, "--fail-on", "never", "--reader", reader, "--cache-dir", cache,
                     "--tables-dir", tables, "--tables-format", TABLE_FORMATS[seed % 2], timeout=30)
        case = f"seed {seed} ({what}): exit {r.returncode}: {r.stderr[-500:]}"
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, case
        if r.returncode == 0:
            assert r.stderr == "", case
            if fmt == "json":
                doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{case}: {c} is not JSON"))  # noqa: B023 (called here)
                assert doc["metrics"]["kernel_count"] >= 0
            else:
                assert r.stdout.startswith(STARTS[fmt]), case
            assert tables.is_dir(), case
        else:
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1 and str(path) in lines[0] and r.stdout == "", case
        assert snapshot(folder) == before, case
    assert leftovers(cache) == []


COMPARE_FORMATS = ["md", "json", "junit"]  # every format compare writes
COMPARE_STARTS = {"md": "# nsys-diagnose compare", "json": "{", "junit": "<?xml"}


@pytest.mark.parametrize("group", range(2))
def test_damaged_exports_compared_give_a_comparison_or_one_line(group, sources, tmp_path):
    """compare, whose renderers the seeds above never reach: a damaged export against the intact
    one (before or after, by seed) ends with a comparison in the format asked, or one line."""
    cache = tmp_path / "cache"
    for seed in range(100 + group * 6, 106 + group * 6):
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        path = folder / "damaged.sqlite"
        what = mutant(sources[seed % 2], path, seed)
        before = snapshot(folder)
        fmt = COMPARE_FORMATS[seed % len(COMPARE_FORMATS)]
        pair = (path, sources[seed % 2]) if seed % 2 else (sources[seed % 2], path)
        r = call_cli("compare", *pair, "--format", fmt, "--cache-dir", cache, timeout=60)
        case = f"seed {seed} ({what}), compare --format {fmt}: exit {r.returncode}: {r.stderr[-500:]}"
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, case
        if r.returncode == 0:
            assert r.stdout.startswith(COMPARE_STARTS[fmt]), case
            if fmt == "json":
                json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{case}: {c} is not JSON"))  # noqa: B023 (called here)
        else:
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1 and str(path) in lines[0] and r.stdout == "", case
        assert snapshot(folder) == before, case
    assert leftovers(cache) == []
