"""Hardening round three (issue 36): values validated on every path, no write outside what the user
named, a cache that is trusted only when it can be, a batch that loses no result, and one
sanitizer for every text format. Each case is what a user or an attacker did; each asserts the
one-line error (exit 2) or the report, and that nothing else changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from nsys_diagnose.errors import NoSpaceError
from nsys_diagnose.text import markdown, spreadsheet_cell

from .cli_harness import assert_one_line_error, call_cli, only_wrote, snapshot
from .synth import write_export
from .test_bad_inputs import base_tables

KERNEL_ID = 2  # the kernel's name in base_tables' StringIds


@pytest.fixture
def export(tmp_path) -> Path:
    (tmp_path / "in").mkdir()
    return write_export(base_tables(), tmp_path / "in" / "run.sqlite")


def with_kernel_name(tmp_path: Path, name: str) -> Path:
    tables = base_tables()
    tables["StringIds"][1]["value"] = name
    return write_export(tables, tmp_path / "named.sqlite")


# -- values validated before use, cached or not --------------------------------------------------

def test_a_huge_integer_is_refused_before_it_is_built(export):
    r = call_cli(export, "--set", "gpu-idle-gaps.min_gap_ns=1e10000000", timeout=10)
    assert_one_line_error(r, "gpu-idle-gaps.min_gap_ns", "outside the 64-bit integer range")


@pytest.mark.parametrize("value, needle", [
    ("[" * 50_000 + "]" * 50_000, "nested too deep"),
    ("9" * 5_000, "integer string conversion"),
])
def test_pyproject_values_python_cannot_build(tmp_path, export, monkeypatch, value, needle):
    (tmp_path / "pyproject.toml").write_text(f"[tool.nsys-diagnose]\nselect = {value}\n")
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(call_cli(export, timeout=20), tmp_path / "pyproject.toml", needle)


@pytest.mark.parametrize("name, value", [
    ("NSYS_DIAGNOSE_MEMORY_LIMIT", "garbage"), ("NSYS_DIAGNOSE_MEMORY_LIMIT", "1KB"),
    ("NSYS_DIAGNOSE_THREADS", "many"), ("NSYS_DIAGNOSE_RULE_TIMEOUT_S", "nan"),
])
def test_a_bad_environment_value_is_refused_when_the_report_is_cached(export, monkeypatch, name, value):
    assert call_cli(export, "-o", export.with_suffix(".md")).returncode in (0, 1)  # the report is cached now
    monkeypatch.setenv(name, value)
    for args in ((), ("--no-cache",)):
        assert_one_line_error(call_cli(export, *args, "-o", export.with_suffix(".md")), name)


@pytest.mark.parametrize("flag", ["--fail-on-regression", "--min-effect", "--confidence", "--alpha"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_compare_refuses_numbers_that_switch_a_threshold_off(export, flag, value):
    if flag in ("--confidence", "--alpha") and value == "inf":
        pytest.skip("above the upper bound already")
    r = call_cli("compare", export, export, flag, value)
    assert_one_line_error(r, flag, "not a finite number")


# -- no write outside what the user named --------------------------------------------------------

def test_the_step_summary_is_never_the_export(export, monkeypatch):
    before = snapshot(export.parent)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(export))
    r = call_cli(export, "--format", "github")
    assert r.returncode == 2 and "is the export being analyzed" in r.stderr
    assert snapshot(export.parent) == before


@pytest.mark.parametrize("make, needle", [
    (lambda d: os.mkfifo(d / "fifo") or d / "fifo", "No such device or address"),  # no reader: no hang
    (lambda d: d, "Is a directory"),
    (lambda d: Path("/dev/null"), "character device"),
])
def test_the_step_summary_must_be_a_regular_file(export, tmp_path, monkeypatch, make, needle):
    target = make(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    r = call_cli(export, "--format", "github", timeout=20)
    assert r.returncode == 2 and needle in r.stderr and "GITHUB_STEP_SUMMARY" in r.stderr


def test_the_step_summary_is_appended_to(export, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert call_cli(export, "--format", "github").returncode in (0, 1)
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "# nsys-diagnose" in text


def test_an_output_name_of_250_bytes_is_written(export, tmp_path):
    out = tmp_path / ("r" * 247 + ".md")
    r = call_cli(export, "-o", out)
    assert r.returncode in (0, 1) and out.read_text().startswith("# nsys-diagnose")


# -- the cache: used only when it can be trusted, skipped when full ------------------------------

def test_a_cache_folder_others_can_write_is_not_used(export, tmp_path):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    for run in range(2):
        r = call_cli(export, "--cache-dir", shared, "-o", export.with_suffix(".md"))
        assert r.returncode in (0, 1)
        assert run == 1 or "can be written by other users" in r.stderr  # said once a process
        assert list(shared.iterdir()) == []  # nothing read from it or written to it


def test_a_new_cache_folder_is_private(export, tmp_path):
    assert call_cli(export, "--cache-dir", tmp_path / "new" / "cache", "-o", export.with_suffix(".md")).returncode in (0, 1)
    assert stat.S_IMODE((tmp_path / "new" / "cache").stat().st_mode) & 0o077 == 0


def test_a_full_cache_folder_falls_back_to_an_uncached_analysis(export, tmp_path, monkeypatch):
    from nsys_diagnose.ingest import database

    cache = tmp_path / "cache"
    real = database.build

    def full_in_the_cache(path, out, *args, **kwargs):
        if cache in Path(out).parents:
            raise NoSpaceError(cache, "no space left to write the ingest database")
        return real(path, out, *args, **kwargs)

    monkeypatch.setattr(database, "build", full_in_the_cache)
    r = call_cli(export, "--cache-dir", cache, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    assert r.stderr.count("\n") == 1 and "no space left in the cache folder; analyzing without the cache" in r.stderr
    assert json.loads(r.stdout)["metrics"]["kernel_count"] == 3


# -- inputs that used to end in an internal error ------------------------------------------------

def test_api_calls_without_a_thread_draw_no_host_lane(tmp_path):
    tables = base_tables()
    for row in tables["CUPTI_ACTIVITY_KIND_RUNTIME"]:
        row["globalTid"] = None  # the schema allows it
    path = write_export(tables, tmp_path / "no-tid.sqlite")
    r = call_cli(path, "--format", "html", "-o", tmp_path / "r.html")
    assert r.returncode in (0, 1) and only_wrote(r.stderr), r.stderr


def test_a_schema_with_bytes_that_are_not_utf8(export, tmp_path):
    path = tmp_path / "bad-schema.sqlite"
    shutil.copy(export, path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET name = CAST(replace(CAST(name AS BLOB), X'4B45524E454C', X'4BFF524E454C') "
                "AS TEXT), sql = CAST(replace(CAST(sql AS BLOB), X'4B45524E454C', X'4BFF524E454C') AS TEXT) "
                "WHERE name LIKE '%KERNEL'")
    con.commit()
    con.close()
    for reader in ("scanner", "sqlite3"):
        assert_one_line_error(call_cli(path, "--reader", reader, "--no-cache"), path, "not UTF-8")


# -- a batch never loses another file's result ---------------------------------------------------

def test_a_batch_keeps_every_result_it_can(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    long_name = "b" * 240 + ".sqlite"  # 247 bytes: legal, and its reports' names still fit
    for name in ("a.sqlite", long_name, "c.sqlite"):
        write_export(base_tables(), inputs / name)
    out = tmp_path / "out"
    (out / "c.json").mkdir(parents=True)  # c's report cannot be written
    r = call_cli(inputs, "-o", out, "--fail-on", "never")
    assert r.returncode == 2 and "1 of 3 input(s) failed" in r.stderr
    assert (out / "a.json").is_file() and (out / ("b" * 240 + ".json")).is_file()
    assert {"summary.md", "reports.parquet", "findings.parquet"} <= {p.name for p in out.iterdir()}
    assert "its report cannot be written (Is a directory)" in (out / "summary.md").read_text()


# -- one sanitizer for every text format ---------------------------------------------------------

ACTIVE = re.compile(r"(?<!\\)(<[a-z/!?]|\[|\]\(|https?://|www\.)", re.I)  # not backslash-escaped
HOSTILE = ["<img src=x onerror=alert(1)>", "![t](https://evil.example/t.png)", "[x](javascript:alert(1))",
           "kernel\u202eevil\u2028next", "see www.evil.example"]


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_text_opens_no_html_link_or_image(name):
    text = markdown(name)
    assert "\u202e" not in text and "\u2028" not in text
    assert not ACTIVE.search(text), text


def test_names_in_the_markdown_report_are_defused(tmp_path):
    path = with_kernel_name(tmp_path, "![t](https://evil.example/t.png)<img src=x onerror=alert(1)>\u202e")
    r = call_cli(path, "--select", "hot-kernels", "--set", "hot-kernels.min_share_pct=0", "-o", tmp_path / "r.md")
    assert r.returncode in (0, 1), r.stderr
    text = (tmp_path / "r.md").read_text()
    assert "evil.example" in text  # the name is shown ...
    assert not ACTIVE.search(text) and "\u202e" not in text  # ... but does nothing


def test_csv_cells_a_spreadsheet_would_run_are_defused(tmp_path):
    path = with_kernel_name(tmp_path, "=HYPERLINK(\"https://evil.example\")")
    r = call_cli(path, "--select", "hot-kernels", "--tables-dir", tmp_path / "t", "-o", tmp_path / "r.md")
    assert r.returncode in (0, 1), r.stderr
    text = (tmp_path / "t" / "hot-kernels.csv").read_text()
    assert "'=HYPERLINK" in text and ',"=HYPERLINK' not in text
    assert spreadsheet_cell("-1") == "'-1" and spreadsheet_cell("kernel") == "kernel"


def test_a_missing_path_is_named_with_its_escapes_visible(tmp_path):
    r = call_cli(str(tmp_path / "nope*\x1b[31m.sqlite"))
    assert "\x1b" not in r.stderr and "\\x1b[31m" in r.stderr


def test_a_rule_file_linked_out_of_its_folder_is_not_read(tmp_path, export):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 is the password\n")
    rules = tmp_path / "rules" / "team"
    rules.mkdir(parents=True)
    shutil.copy(Path(__file__).parent.parent / "rules" / "gpu" / "gpu-idle-gaps.yaml", rules / "my-rule.yaml")
    (rules / "my-rule.yaml").write_text((rules / "my-rule.yaml").read_text()
                                        .replace("id: gpu-idle-gaps", "id: my-rule").replace("category: gpu", "category: team"))
    (rules / "my-rule.sql").symlink_to(secret)
    r = call_cli(export, "--rules", tmp_path / "rules")
    line = assert_one_line_error(r, "my-rule.sql", "symbolic link to a file outside its folder")
    assert "hunter2" not in line


# -- memory: what user rules and scenarios may take ----------------------------------------------

def test_a_rule_that_builds_a_2_gb_string_fails_alone(tmp_path):
    """DuckDB's memory_limit does not cover strings built in an expression: this rule took 3.9 GB.
    In a process of its own: the ceiling is set from the main thread only (ceiling.py)."""
    import subprocess
    import sys

    from .test_output_bounds import EXPORT, user_rule

    user_rule(tmp_path / "rules", "huge-string", "SELECT length(repeat('x', 2000000000)) AS x")
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", EXPORT, "--rules", tmp_path / "rules", "--select",
                        "huge-string", "--format", "json", "--fail-on", "never", "--no-cache"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rule = next(x for x in json.loads(r.stdout)["rules"] if x["id"] == "huge-string")
    assert rule["status"] == "error" and "out of memory" in rule["reason"] and "MiB to the process" in rule["reason"]


def test_a_doubling_recursive_query_stops_at_the_ceiling(tmp_path, monkeypatch):
    """A recursive CTE that doubles a string took 4.2 GB; under a ceiling of 192 MiB it stops at once
    (the suite's small budget; the full size is in bench/hostile_memory.py)."""
    import resource

    from nsys_diagnose.engine import runner
    from nsys_diagnose.engine.catalog import load_rule
    from nsys_diagnose.ingest.database import open_trace

    from .test_output_bounds import EXPORT, user_rule

    monkeypatch.setattr(runner, "RULES_HEADROOM_BYTES", 192 << 20)
    doubling = load_rule(user_rule(tmp_path / "rules", "doubling", "WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION ALL "
                                   "SELECT n + 1, s || s FROM t WHERE n < 32) SELECT max(length(s)) AS x FROM t"))
    quick = load_rule(user_rule(tmp_path / "rules", "quick", "SELECT 1 AS x"))
    before = resource.getrlimit(resource.RLIMIT_DATA)
    trace = open_trace(EXPORT, cache_dir=tmp_path / "cache")
    try:
        failed, passed = runner.run_rules(trace.con, [doubling, quick], {}, trace.captured)
    finally:
        trace.close()
    assert failed.status == "error" and "out of memory" in failed.reason, failed.reason
    assert passed.status == "fired"
    assert resource.getrlimit(resource.RLIMIT_DATA) == before  # the ceiling is lifted after the rules


def test_a_scenario_of_too_many_rows_is_refused_before_it_is_built(tmp_path):
    folder = tmp_path / "rules" / "team"
    shutil.copytree(Path(__file__).parent.parent / "rules" / "gpu", folder, ignore=shutil.ignore_patterns("_fixtures"))
    scenarios = folder / "_fixtures" / "gpu-idle-gaps"
    scenarios.mkdir(parents=True)
    row = "{start: 1000, end: 2000, deviceId: 0, correlationId: 1, repeat: {n: 1000000, every_ns: 5000}}"
    (scenarios / "fires-flood.yaml").write_text(
        "description: forty rows at the repeat cap\ngiven:\n  CUPTI_ACTIVITY_KIND_KERNEL:\n"
        + "".join(f"    - {row}\n" for _ in range(40)) + "expect: {status: fired}\n")
    r = call_cli("test-rules", tmp_path / "rules", timeout=30)
    assert r.returncode == 2 and "fires-flood.yaml" in r.stderr and "at most 1,000,000" in r.stderr, r.stderr


# -- memory: text cut where it is read from the export -------------------------------------------

@pytest.mark.parametrize("reader", ["scanner", "sqlite3"])
def test_a_huge_kernel_name_is_cut_at_ingest(tmp_path, reader):
    """A 10 MB kernel name took 36 s and 2.2 GB: every row joined to it carried it through every
    rule. Cut to 131,072 characters and marked (the suite's size is 1 MB; bench/hostile_memory.py)."""
    path = with_kernel_name(tmp_path, "k" * (1 << 20))
    r = call_cli(path, "--reader", reader, "--no-cache", "--format", "json", "--fail-on", "never",
                 "--select", "hot-kernels", "--set", "hot-kernels.min_share_pct=0", timeout=60)
    assert r.returncode == 0, r.stderr
    (row,) = next(x for x in json.loads(r.stdout)["rules"] if x["id"] == "hot-kernels")["rows"]
    assert row["name"].startswith("k" * 1000) and row["name"].endswith("[truncated: 1,048,576 bytes in all]")
    assert len(row["name"]) < 131_072 + 100


@pytest.mark.parametrize("reader", ["scanner", "sqlite3"])
def test_huge_nvtx_texts_are_cut_at_ingest(tmp_path, reader):
    tables = base_tables()
    gtid = tables["CUPTI_ACTIVITY_KIND_RUNTIME"][0]["globalTid"]
    tables["NVTX_EVENTS"] = [{"start": 1_000_000 + i * 1_000_000, "end": 1_500_000 + i * 1_000_000, "eventType": 59,
                              "globalTid": gtid, "text": f"{i}" + "r" * (1 << 20), "textId": None, "domainId": 0,
                              "endGlobalTid": None} for i in range(4)]
    path = write_export(tables, tmp_path / "nvtx.sqlite")
    r = call_cli(path, "--reader", reader, "--no-cache", "--format", "json", "--fail-on", "never",
                 "--select", "nvtx-ranges", timeout=60)
    assert r.returncode == 0, r.stderr
    names = {row.get("name", "") for x in json.loads(r.stdout)["rules"] for row in x.get("rows", [])}
    assert names and all(len(n) < 131_072 + 100 for n in names)
    assert any(n.endswith("bytes in all]") for n in names), names


def test_a_name_on_a_terminal_makes_no_hyperlink(tmp_path):
    """Rich renders a Markdown link as an OSC 8 hyperlink: a kernel named like a link took the
    reader's terminal to that URL (issue 36)."""
    from .test_terminal import run_on_terminal

    path = with_kernel_name(tmp_path, "![t](https://evil.example/t.png)[x](javascript:alert(1))")
    code, raw, err = run_on_terminal(path, "--no-cache", "--select", "hot-kernels", "--set", "hot-kernels.min_share_pct=0",
                                     rows=60, cols=200)
    assert code in (0, 1), err
    assert "evil.example" in raw  # the name is shown ...
    assert "\x1b]8;" not in raw  # ... and links nowhere


def test_every_promise_names_tests_that_exist():
    """docs/reference.md's table of promises names the tests that hold them: each named test exists."""
    root = Path(__file__).parent
    text = (root.parent / "docs" / "reference.md").read_text()
    table = text[text.index("### The promises and the tests that hold them"):]
    named = re.findall(r"`(test_\w+\.py)(?:::(test_\w+))?`", table.split("\n## ")[0])
    assert len(named) > 30
    for module, test in named:
        source = (root / module).read_text()
        assert not test or re.search(rf"^def {test}\(", source, re.M), f"{module}::{test} is not a test"


def _report_of(path, **options) -> dict:
    """The report as JSON, without what varies from run to run (timings, the input's facts)."""
    from nsys_diagnose.analyze import analyze

    doc = analyze(path, use_cache=False, **options).model_dump(mode="json")
    for rule in doc["rules"]:
        rule.pop("seconds", None)
    doc["input"] = {}
    return doc


def test_names_past_the_enum_bound_are_text_and_the_report_is_the_same(tmp_path, monkeypatch):
    """Binding a statement costs time in the label ENUM's size (1e5 distinct kernel names: a 4 s
    ingest took 46 s): past MAX_LABELS values the labels are text, which sorts and compares alike."""
    from nsys_diagnose.ingest import database

    from .test_bad_inputs import corpus_tables

    path = write_export(corpus_tables(), tmp_path / "corpus.sqlite")

    as_enum = _report_of(path)
    monkeypatch.setattr(database, "MAX_LABELS", 3)
    built = []
    real = database._label_type
    monkeypatch.setattr(database, "_label_type", lambda con, stmt: built.append(out := real(con, stmt)) or out)
    as_text = _report_of(path)
    assert "CREATE TYPE label AS VARCHAR" in built and "CREATE TYPE call_label AS VARCHAR" in built
    assert as_text == as_enum


@pytest.mark.parametrize("as_text", ["label", "call_label", "short_label"])
def test_either_label_type_as_text_gives_the_same_report(monkeypatch, as_text):
    """`label` (kernel names), `call_label` (API and OS call names) and `short_label` (kernels'
    short names) fall back to text apart (a NUL in a kernel name need not make the call names
    text): a table or rule that mixes them then mixes an ENUM with text, and must read as when
    all are ENUMs."""
    from nsys_diagnose.ingest import database

    from .conftest import FIXTURES

    # a real export with API calls, OS calls (sem waits, polls) and idle gaps named by both
    path = FIXTURES / "exports" / "dataloader_workers_restart.sqlite"

    both_enums = _report_of(path)
    real = database._label_type

    def one_as_text(con, stmt: str) -> str:
        found = database._LABEL_ENUM.match(stmt)
        return f"CREATE TYPE {as_text} AS VARCHAR" if found and found[1] == as_text else real(con, stmt)

    monkeypatch.setattr(database, "_label_type", one_as_text)
    assert _report_of(path) == both_enums


@pytest.mark.parametrize("source", ["corpus", "optimizer_launch_bound"])
def test_text_read_inside_sqlite_is_the_scanners_text(tmp_path, monkeypatch, source):
    """The scanner reads a table with a text value past the cut through sqlite_query, the cut
    inside SQLite; on exports whose texts are all shorter (the corpus's names in other encodings,
    blobs and numbers in text columns; a real export's NVTX, GPU, process and metadata tables),
    that path gives the same report as sqlite_scan."""
    from nsys_diagnose.ingest.reader import ScannerReader

    from .conftest import FIXTURES
    from .test_bad_inputs import corpus_tables

    path = (write_export(corpus_tables(), tmp_path / "corpus.sqlite") if source == "corpus"
            else FIXTURES / "exports" / f"{source}.sqlite")

    scanned = _report_of(path, reader="scanner")
    read = []
    monkeypatch.setattr(ScannerReader, "_long_text", lambda self, table, text: read.append(table) or True)
    assert _report_of(path, reader="scanner") == scanned
    assert "StringIds" in read and (source == "corpus" or {"NVTX_EVENTS", "TARGET_INFO_GPU", "PROCESSES"} <= set(read))


def peak_rss_mib(*args) -> tuple[int, subprocess.CompletedProcess]:
    """A CLI run in a fresh process: (its peak RSS in MiB, the run)."""
    r = subprocess.run([sys.executable, "-c", "import resource, sys\nfrom nsys_diagnose.main import main\n"
                        "sys.argv = ['nsys-diagnose', *sys.argv[1:]]\ntry: main()\nfinally: print("
                        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10, file=sys.stderr)", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.splitlines()
    return int(lines[-1]), subprocess.CompletedProcess(r.args, r.returncode, r.stdout, "\n".join(lines[:-1]))


@pytest.mark.parametrize("reader", ["scanner", "sqlite3"])
def test_name_cells_on_one_self_referencing_overflow_page(tmp_path, export, reader):
    """Thirty long names continue on one overflow page that names itself as the next: a 63 MB file
    reads as 190 MB of text (issue 36: 35 MB as 2.1 GB, 4.1 GB of RSS). Both readers cut each value
    inside SQLite, one at a time, so the run costs what a small export's does (the scanner's
    sqlite_scan, which hands each value over whole, took 430 MiB more; full size:
    bench/hostile_memory.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_memory", Path(__file__).parent.parent / "bench" / "hostile_memory.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = bench.overflow_chain(tmp_path, cells=30, mb=6)
    options = ("--reader", reader, "--no-cache", "--format", "json", "--fail-on", "never")
    small, _ = peak_rss_mib(export, *options)
    peak, r = peak_rss_mib(path, *options)
    assert r.returncode == 0 and only_wrote(r.stderr), r.stderr
    assert json.loads(r.stdout)["metrics"]["kernel_count"] == 3
    assert peak < small + 150, f"{peak} MiB, {small} MiB on a small export"


def test_a_rule_of_many_rows_holds_few_in_python(tmp_path, export):
    """A rule returning 300,000 rows (issue 36: 1e6 distinct kernel names gave hot-kernels a million,
    held as Python dicts up to the rules' ceiling, then out of memory): the runner keeps the rows
    the report shows and each finding's rows, counts the rest, and Python allocates a few MB."""
    import tracemalloc

    from nsys_diagnose.engine.catalog import load_rule
    from nsys_diagnose.engine.runner import run_rule
    from nsys_diagnose.ingest.database import open_trace

    from .test_security import write_rule

    rule = load_rule(write_rule(tmp_path / "rules", "many-rows", "SELECT range AS x, 'name ' || range AS y, "
                                "range % 7 = 0 AS b FROM range(300000) ORDER BY range", when="x % 1000 = 999",
                                extra="rows_limit: 20\n"))
    trace = open_trace(export, use_cache=False)
    tracemalloc.start()
    try:
        result = run_rule(trace.con, rule, {}, trace.captured)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        trace.close()
    assert (result.status, result.row_count) == ("fired", 300_000), result.reason
    assert [r["x"] for r in result.rows] == list(range(20)) and result.rows[3] == {"x": 3, "y": "name 3", "b": False}
    assert [f.evidence["x"] for f in result.findings] == [999 + 1000 * i for i in range(10)]
    assert peak < 30 << 20, f"{peak >> 20} MiB allocated in Python"


def test_the_api_medians_are_median_without_its_memory():
    """cuda-api-overhead takes its medians from each API's distinct durations and their counts:
    median()'s state holds every call's value outside DuckDB's cap (at 1e7 kernels 600 MB, the
    cold run's peak). Each median equals median() over the same calls, all of them and the
    steady state's, on an export with APIs of even and odd call counts."""
    from nsys_diagnose.engine.catalog import load_rules
    from nsys_diagnose.engine.runner import run_rule
    from nsys_diagnose.ingest.database import open_trace

    from .conftest import FIXTURES

    trace = open_trace(FIXTURES / "exports" / "optimizer_launch_bound.sqlite", use_cache=False)
    try:
        result = run_rule(trace.con, load_rules()["cuda-api-overhead"], {}, trace.captured)
        expected = {(api, layer): (median, steady) for api, layer, median, steady in trace.con.execute(
            "SELECT a.api, a.layer, median(a.duration_ns), median(a.duration_ns) FILTER (WHERE a.start_ns >= ss.start_ns "
            "AND a.start_ns < ss.end_ns) FROM api_calls a LEFT JOIN steady_state ss ON ss.pid = a.pid GROUP BY ALL").fetchall()}
    finally:
        trace.close()
    rows = {(r["api"], r["layer"]): (r["median_ns"], r["steady_median_ns"]) for r in result.rows}
    assert rows == expected and len(rows) == result.row_count
    assert {r["calls"] % 2 for r in result.rows} == {0, 1}
