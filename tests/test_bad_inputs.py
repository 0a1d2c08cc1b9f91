"""The bad-input corpus: every malformed, hostile or odd export gives either a correct report or
one clear line naming the file and the problem with exit code 2. Never a traceback, never a hang.

Every input is generated here (tests/synth.py plus small byte edits): no binaries in the repo.
Every CLI run is bounded by a timeout (tests/cli_harness.py), so a hang fails the test instead of
stalling the suite. Row-level oddities share one export (`corpus`), each on its own kernel name
or device so that every expectation below is exact.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .cli_harness import TIMEOUT_S, assert_one_line_error, call_cli, run_cli
from .conftest import ROOT
from .synth import write_export

READERS = ["scanner", "sqlite3"]
PID = 100
GPID = (1 << 48) + PID * (1 << 24)          # serialized globalPid of pid 100
GTID = GPID + 7                              # its thread 7
BIG = (1 << 63) - 1                          # the largest SQLite INTEGER
# The largest well-formed serialized ids: hardware id 127, VM id 255, pid and tid 2^24 - 1.
HUGE_GPID = (0x7F << 56) | (0xFF << 48) | (0xFFFFFF << 24)
HUGE_GTID = HUGE_GPID | 0xFFFFFF
# ... and one with hardware id 255, whose top bit makes the int64 negative.
NEG_GPID = (0xFF << 56) - (1 << 64) + (0x12345 << 24)


def kernel(start, end, corr: int, name_id: int = 2, **over) -> dict:
    row = {"start": start, "end": end, "deviceId": 0, "contextId": 1, "streamId": 7,
           "correlationId": corr, "globalPid": GPID, "demangledName": name_id, "shortName": name_id}
    return row | over


def api(start, end, corr: int, name_id: int = 1, **over) -> dict:
    row = {"start": start, "end": end, "eventClass": 0, "globalTid": GTID, "correlationId": corr,
           "nameId": name_id, "returnValue": 0}
    return row | over


def base_tables() -> dict[str, list[dict]]:
    """A small well-formed export: 3 launches of one 5 ms kernel, two idle gaps of 5 ms."""
    return {
        "StringIds": [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 2, "value": "my_kernel"}],
        "CUPTI_ACTIVITY_KIND_RUNTIME": [api(1_000_000 + i * 10_000_000, 1_005_000 + i * 10_000_000, i + 1)
                                        for i in range(3)],
        "CUPTI_ACTIVITY_KIND_KERNEL": [kernel(1_010_000 + i * 10_000_000, 6_010_000 + i * 10_000_000, i + 1)
                                       for i in range(3)],
    }


def json_report(r, label: str, rule_errors: str | None = None) -> dict:
    """The report must be valid JSON and no rule may fail, except, with `rule_errors`, with
    that text in its reason (a rule's arithmetic on absurd values)."""
    assert r.returncode == 0 and r.stderr == "", (label, r.stderr[-2000:])
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    failed = [x["reason"] for x in doc["rules"] if x["status"] == "error"]
    assert all(rule_errors and rule_errors in reason for reason in failed), failed
    return doc


def report_of(path: Path, reader: str, rule_errors: str | None = None) -> dict:
    """The JSON report through the CLI's entry point: no word on stderr."""
    r = call_cli(path, "--format", "json", "--reader", reader, "--fail-on", "never")
    return json_report(r, str(path), rule_errors)


def rule(doc: dict, rule_id: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rule_id)


@pytest.fixture
def good(tmp_path) -> Path:
    return write_export(base_tables(), tmp_path / "good.sqlite")


# --- files that are not exports ----------------------------------------------------------------

def test_missing_path(tmp_path):
    path = tmp_path / "no-such.sqlite"
    assert_one_line_error(run_cli(path), path, "no such file")  # a real process, once


def test_directory(tmp_path):
    assert_one_line_error(call_cli(tmp_path), tmp_path, "is a directory")


def test_broken_symlink(tmp_path):
    link = tmp_path / "dangling.sqlite"
    link.symlink_to(tmp_path / "gone.sqlite")
    assert_one_line_error(call_cli(link), link, "no such file")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_not_a_regular_file(tmp_path, kind):
    """A named pipe would block a plain open() forever; a device is no export either."""
    path = tmp_path / "pipe.sqlite"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    assert_one_line_error(call_cli(path, timeout=20), path, "not a regular file")


def _unprivileged_python_works() -> bool:
    try:
        probe = subprocess.run([sys.executable, "-c", "import nsys_diagnose.cli"], cwd=ROOT, capture_output=True,
                               preexec_fn=lambda: os.setuid(65534), timeout=TIMEOUT_S)
    except OSError:  # e.g. the interpreter lives under /root, which uid 65534 cannot enter
        return False
    return probe.returncode == 0


def test_no_permission(good):
    """chmod 000 stops every user but root. As root, the CLI runs as uid 65534 ('nobody'), for
    whom the file is unreadable; where that user cannot run the project's Python, the case is
    skipped (test_read_error_is_one_line covers the same error path in-process)."""
    good.chmod(0)
    try:
        if os.geteuid() != 0:
            r = run_cli(good)
        elif _unprivileged_python_works():
            r = run_cli(good, "--no-cache", user=65534)
        else:
            pytest.skip("running as root (chmod 000 does not stop root reads) and uid 65534 cannot run "
                        "this Python, so no unreadable file can be made")
        assert_one_line_error(r, good, "cannot be read")
    finally:
        good.chmod(0o644)


def test_read_error_is_one_line(good, monkeypatch):
    """The EACCES path, simulated where no file can be made unreadable (root): the CLI's own
    entry point prints one line with the file and the OS error and exits 2."""
    real_open = os.open

    def denied(path, *a, **k):
        if os.fspath(path) == str(good):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    line = assert_one_line_error(call_cli(good), good)
    assert line == f"nsys-diagnose: {good}: cannot be read (Permission denied)"


def test_zero_bytes(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    assert_one_line_error(call_cli(path), path, "empty (0 bytes)")


def test_not_sqlite(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("this is a text file, not an export\n" * 100)
    assert_one_line_error(call_cli(path), path, "not a SQLite database")


def test_binary_that_is_not_sqlite(tmp_path):
    path = tmp_path / "report.nsys-rep.sqlite"
    path.write_bytes(bytes(range(256)) * 64)
    assert_one_line_error(call_cli(path), path, "not a SQLite database")


def test_header_only(good, tmp_path):
    path = tmp_path / "header.sqlite"
    path.write_bytes(good.read_bytes()[:60])
    assert_one_line_error(call_cli(path), path, "truncated")


@pytest.mark.parametrize("keep", ["half", "all but 100 bytes"])
def test_truncated_sqlite(good, tmp_path, keep):
    data = good.read_bytes()
    path = tmp_path / "truncated.sqlite"
    path.write_bytes(data[: len(data) // 2] if keep == "half" else data[:-100])
    assert_one_line_error(call_cli(path), path, "truncated")


def _page_size(data: bytes) -> int:
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else size


@pytest.mark.parametrize("reader", READERS)
def test_corrupted_schema_page(good, tmp_path, reader):
    """Page 1 holds sqlite_master: garbage there makes the table list unreadable."""
    data = bytearray(good.read_bytes())
    data[100:_page_size(data)] = bytes([0xA5]) * (_page_size(data) - 100)
    path = tmp_path / "bad-schema.sqlite"
    path.write_bytes(bytes(data))
    assert_one_line_error(call_cli(path, "--reader", reader), path, "not a readable SQLite database")


@pytest.mark.parametrize("reader", READERS)
def test_corrupted_data_pages(good, tmp_path, reader):
    """Every page after the schema page overwritten: the tables exist but cannot be read.
    A real process: SQLite's error crosses DuckDB's Arrow stream in the sqlite3 reader."""
    data = bytearray(good.read_bytes())
    page = _page_size(data)
    for off in range(page, len(data), page):
        data[off:off + page] = bytes([0x5A]) * page
    path = tmp_path / "bad-pages.sqlite"
    path.write_bytes(bytes(data))
    assert_one_line_error(run_cli(path, "--reader", reader, "--no-cache"), path, "malformed")


def test_header_with_impossible_page_size(good, tmp_path):
    data = bytearray(good.read_bytes())
    data[16:18] = (3000).to_bytes(2, "big")  # not a power of two: no valid SQLite file has it
    path = tmp_path / "bad-header.sqlite"
    path.write_bytes(bytes(data))
    assert_one_line_error(call_cli(path), path, "")


def test_foreign_sqlite(tmp_path):
    path = tmp_path / "addressbook.sqlite"
    write_export({"people": [{"name": "Ada", "born": 1815}]}, path)
    assert_one_line_error(call_cli(path), path, "not an nsys export")


def test_sqlite_without_tables(tmp_path):
    path = tmp_path / "blank.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 1")  # writes the header page, creates no table
    con.commit()
    con.close()
    assert_one_line_error(call_cli(path), path, "not an nsys export")


def test_nsys_names_on_views_only(tmp_path):
    """A foreign database whose nsys-named objects are views, not tables: not an export."""
    path = tmp_path / "views.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t(x)")
    con.execute("CREATE VIEW StringIds AS SELECT 1 AS id, 'x' AS value")
    con.commit()
    con.close()
    assert_one_line_error(call_cli(path), path, "not an nsys export")


# --- exports with odd contents: a correct report -----------------------------------------------

def test_empty_export(tmp_path):
    """The nsys tables, no rows: a report that says nothing was captured, every number zero."""
    path = tmp_path / "empty-export.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER, '
                "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER)")
    con.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, "end" INTEGER, eventClass INTEGER, '
                "globalTid INTEGER, correlationId INTEGER, nameId INTEGER)")
    con.commit()
    con.close()
    doc = report_of(path, "scanner")
    m = doc["metrics"]
    assert (m["kernel_count"], m["span_ns"], m["gpu_busy_ns"], m["gpu_utilization_pct"]) == (0, 0, 0, 0)
    assert m["devices"] == [] and "No CUDA activity was captured" in doc["headline"]
    assert rule(doc, "hot-kernels")["status"] == "passed" and rule(doc, "hot-kernels")["rows"] == []
    assert rule(doc, "transfer-share")["status"] == "skipped"
    md = call_cli(path, "--fail-on", "never")
    assert md.returncode == 0 and md.stderr == "" and "No CUDA activity was captured" in md.stdout


NAMES = {
    "quotes": 'my"kernel\'s `tick` \\"esc\\" <T> | pipe *star* _u_',
    "newlines": "line one\nline two\r\nline three\n",
    "unicode": "核函数_ядро_🚀_\u200b_e\u0301_\U0001F600",
    "long": "void deep::template_kernel<" + "float, " * 14_400 + "int>(float*)",  # > 100 KB
    "empty": "",
    "sql": "x'); DROP TABLE kernels; --",
    "controls": "\x1b[2J\x1b[31mred\x07bell\ttab\x00nul\x9bcsi",  # terminal escapes, NUL, C1
}
BAD_UTF8 = bytes.fromhex("6B65726E656CFFFE80")  # "kernel" and three bytes that are not UTF-8
BAD_UTF8_AS_READ = "kernel\\xFF\\xFE\\x80"        # both readers escape them the same way


def corpus_tables() -> dict[str, list[dict]]:
    """The base export plus one kernel name per oddity (name ids 10+). Device 0 holds the base
    kernels and the rows that must be dropped; device 1 the duplicates; device 2 the odd names;
    device BIG the huge ids; processes HUGE_GPID and NEG_GPID one kernel each."""
    t = base_tables()
    k, a, s = t["CUPTI_ACTIVITY_KIND_KERNEL"], t["CUPTI_ACTIVITY_KIND_RUNTIME"], t["StringIds"]
    s += [{"id": 10, "value": "null_end"}, {"id": 11, "value": "null_start"}, {"id": 12, "value": "backwards"},
          {"id": 13, "value": "zero_start"}, {"id": 14, "value": "dup"}, {"id": 15, "value": "huge_ids"},
          {"id": BIG, "value": "huge_string_id"}, {"id": 17, "value": "huge_pid"}, {"id": 18, "value": "neg_pid"}]
    # rows that are not intervals: none may count, none may stretch the window (ends at 26.01 ms)
    k += [kernel(20_000_000, None, 50, 10), kernel(None, 22_000_000, 51, 11),
          kernel(90_000_000, 80_000_000, 52, 12), kernel(0, 1_000, 53, 13)]
    a += [api(24_000_000, None, 50), api(95_000_000, 94_000_000, 52), api(None, 2_000_000, 51)]
    # exact duplicates: both counted as rows (as nsys does), busy time a union
    k += [kernel(2_000_000, 3_000_000, 60, 14, deviceId=1)] * 2
    # odd names on device 2, each 100 us, 1 ms apart
    for i, name in enumerate(NAMES.values()):
        s.append({"id": 30 + i, "value": name})
        k.append(kernel(2_000_000 + i * 1_000_000, 2_100_000 + i * 1_000_000, 70 + i, 30 + i, deviceId=2))
    s.append({"id": 29, "value": "placeholder"})  # replaced by BAD_UTF8 bytes after writing
    k.append(kernel(9_500_000, 9_600_000, 69, 29, deviceId=2))
    k.append(kernel(10_000_000, 10_100_000, 68, 28, deviceId=2))  # name id without a string
    # the long name takes a quarter of kernel time, so a finding renders it: 6 ms, device 2
    k.append(kernel(12_000_000, 18_000_000, 80, 33, deviceId=2))
    # huge ids: correlation, string, stream, context and device ids near 2^63
    a.append(api(14_500_000, 14_600_000, BIG - 5))
    k.append(kernel(15_000_000, 15_500_000, BIG - 5, 15, deviceId=BIG, streamId=BIG - 2, contextId=BIG - 3))
    k.append(kernel(16_000_000, 16_250_000, 81, BIG, deviceId=BIG))
    k.append(kernel(17_000_000, 17_100_000, 82, 17, deviceId=3, globalPid=HUGE_GPID))
    a.append(api(16_900_000, 16_950_000, 82, globalTid=HUGE_GTID))
    k.append(kernel(18_000_000, 18_100_000, 83, 18, deviceId=3, globalPid=NEG_GPID))
    return t


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict]:
    """The corpus export, in a folder whose name has quotes, spaces, '%', '#', '?' and '='
    (they must reach neither SQL nor a SQLite URI unescaped), analyzed with both readers.
    The scanner run is a real process; the Markdown comes from a second run."""
    folder = tmp_path_factory.mktemp("corpus") / "it's a \"dir\" %20 #1 ?x=y"
    folder.mkdir()
    path = write_export(corpus_tables(), folder / "rep'ort; DROP.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE id = 29", [BAD_UTF8])
    con.commit()
    con.close()
    docs = {"scanner": json_report(run_cli(path, "--format", "json", "--reader", "scanner", "--fail-on", "never"),
                                   "scanner"),
            "sqlite3": report_of(path, "sqlite3")}
    md = call_cli(path, "--fail-on", "never")
    assert md.returncode == 0 and md.stderr == "", md.stderr[-2000:]
    return docs | {"path": path, "markdown": md.stdout}


def hot(doc: dict) -> dict[str, dict]:
    return {r["name"]: r for r in rule(doc, "hot-kernels")["rows"]}


def test_readers_agree_on_the_corpus(corpus):
    strip = lambda d: {k: v for k, v in d.items() if k != "input"} | {"rules": [  # noqa: E731
        {k: v for k, v in r.items() if k != "seconds"} for r in d["rules"]]}
    assert strip(corpus["scanner"]) == strip(corpus["sqlite3"])
    assert corpus["scanner"]["input"]["path"] == str(corpus["path"])


@pytest.mark.parametrize("reader", READERS)
def test_rows_that_are_not_intervals_are_dropped(corpus, reader):
    """NULL start or end, end before start, start 0: not counted, and the window is not
    stretched by them."""
    doc = corpus[reader]
    names = hot(doc)
    assert not {"null_end", "null_start", "backwards", "zero_start"} & set(names)
    assert doc["metrics"]["window_end_ns"] == 26_010_000 and doc["metrics"]["window_start_ns"] == 1_000_000
    calls = {r["api"]: r["calls"] for r in rule(doc, "cuda-api-overhead")["rows"]}
    assert calls == {"cudaLaunchKernel": 5}  # 3 base + 2 huge-id calls; the 3 broken ones dropped


@pytest.mark.parametrize("reader", READERS)
def test_duplicate_rows(corpus, reader):
    doc = corpus[reader]
    assert (hot(doc)["dup"]["instances"], hot(doc)["dup"]["total_ns"]) == (2, 2_000_000)
    busy = {d["device_id"]: d["busy_ns"] for d in doc["metrics"]["devices"]}
    assert busy[1] == 1_000_000  # the union counts the interval once


@pytest.mark.parametrize("reader", READERS)
def test_odd_kernel_names_survive_intact(corpus, reader):
    names = hot(corpus[reader])
    for name in NAMES.values():
        assert name in names, repr(name[:60])
    assert len(NAMES["long"]) > 100_000
    assert (names[NAMES["long"]]["instances"], names[NAMES["long"]]["total_ns"], names[NAMES["long"]]["rank"]) \
        == (2, 6_100_000, 2)
    assert names[BAD_UTF8_AS_READ]["instances"] == 1
    assert names["[unnamed kernel]"]["instances"] == 1  # its name id has no string
    findings = [f for f in corpus[reader]["findings"] if f["rule_id"] == "hot-kernels"]
    assert len(findings) == 2 and all(len(f["message"]) < 500 for f in findings)  # the short, clipped name


def test_odd_kernel_names_in_markdown(corpus):
    md = corpus["markdown"]
    assert len(md) < 30_000  # the 100 KB name is shortened, never dumped
    assert not [c for c in md if c != "\n" and (ord(c) < 32 or 127 <= ord(c) < 160)]  # no escapes reach a terminal
    for line in md.splitlines():
        assert "line two" not in line or "line one" in line  # a name never splits a line
    assert md.splitlines()[0] == "# nsys-diagnose: rep'ort; DROP.sqlite"


@pytest.mark.parametrize("reader", READERS)
def test_huge_ids(corpus, reader):
    """Ids near 2^63 stay exact: correlation ids still join a kernel to its launch, string ids
    resolve, device ids are kept, serialized pids decode to 24 bits (also with the top bit set)."""
    doc = corpus[reader]
    names = hot(doc)
    assert names["huge_ids"]["total_ns"] == 500_000 and names["huge_string_id"]["total_ns"] == 250_000
    busy = {d["device_id"]: d["busy_ns"] for d in doc["metrics"]["devices"]}
    assert busy[BIG] == 750_000 and busy[3] == 200_000
    pids = {(p["pid"], p["device_id"]) for p in doc["metrics"]["processes"]}
    assert {((1 << 24) - 1, 3), (0x12345, 3), (PID, BIG)} <= pids


def test_timestamps_near_the_int64_limit(tmp_path):
    """A session clock near 2^62: differences and sums stay exact (no float rounding)."""
    base = 1 << 62
    t = base_tables()
    for row in t["CUPTI_ACTIVITY_KIND_KERNEL"] + t["CUPTI_ACTIVITY_KIND_RUNTIME"]:
        row["start"] += base
        row["end"] += base
    doc = report_of(write_export(t, tmp_path / "late-clock.sqlite"), "scanner")
    m = doc["metrics"]
    assert m["window_start_ns"] == base + 1_000_000 and m["span_ns"] == 25_010_000
    assert (m["kernel_ns"], m["gpu_busy_ns"]) == (15_000_000, 15_000_000)
    assert [g["duration_ns"] for g in rule(doc, "gpu-idle-gaps")["rows"]] == [5_000_000, 5_000_000]


def test_durations_that_overflow_int64_when_summed(tmp_path):
    """Two kernels of 2^62 ns each: their total, 2^63, does not fit a BIGINT but is reported
    exactly."""
    t = base_tables()
    t["CUPTI_ACTIVITY_KIND_KERNEL"] = [kernel(1, (1 << 62) + 1, 1), kernel(2, (1 << 62) + 2, 2, deviceId=1)]
    doc = report_of(write_export(t, tmp_path / "overflow.sqlite"), "scanner", rule_errors="Out of Range Error")
    assert doc["metrics"]["kernel_ns"] == doc["metrics"]["gpu_busy_ns"] == 1 << 63
    assert hot(doc)["my_kernel"]["total_ns"] == 1 << 63


@pytest.mark.parametrize("case", ["api-spans-all-of-int64", "non-canonical-global-ids"])
def test_values_whose_arithmetic_overflows(tmp_path, case):
    """Garbage ids and times whose differences or sums leave int64: a report, or one line."""
    t = base_tables()
    if case == "api-spans-all-of-int64":
        t["CUPTI_ACTIVITY_KIND_RUNTIME"].append(api(-(1 << 63), BIG, 10))
    else:  # every bit set, tid bits included: no nsys writes this
        for row in t["CUPTI_ACTIVITY_KIND_KERNEL"]:
            row["globalPid"] = BIG
        for row in t["CUPTI_ACTIVITY_KIND_RUNTIME"]:
            row["globalTid"] = BIG
    path = write_export(t, tmp_path / f"{case}.sqlite")
    r = call_cli(path, "--format", "json", "--fail-on", "never")
    if r.returncode == 2:
        assert_one_line_error(r, path, "could not be read")
    else:
        m = json_report(r, case, rule_errors="Out of Range Error")["metrics"]
        assert (m["kernel_count"], m["kernel_ns"]) == (3, 15_000_000)


@pytest.mark.parametrize("reader", READERS)
def test_text_in_integer_columns(tmp_path, reader):
    """A timestamp column declared TEXT, holding numbers and words: numbers read as numbers, the
    row with words is no interval and is dropped, the same with both readers."""
    t = base_tables()
    for row in t["CUPTI_ACTIVITY_KIND_KERNEL"]:
        row["start"], row["end"] = str(row["start"]), str(row["end"])
    t["CUPTI_ACTIVITY_KIND_KERNEL"].append(kernel("soon", "later", 10))
    m = report_of(write_export(t, tmp_path / "text-times.sqlite"), reader)["metrics"]
    assert (m["kernel_count"], m["kernel_ns"]) == (3, 15_000_000)


@pytest.mark.parametrize("reader", READERS)
def test_values_unlike_their_declared_type(good, reader):
    """An INTEGER column holding a word and a blob: the scanner refuses it in one line that
    names the way out; the sqlite3 reader converts the values and drops the row."""
    con = sqlite3.connect(good)
    con.execute('INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, globalPid, correlationId, '
                "demangledName) VALUES ('soon', X'00FF', 0, ?, 50, 2)", [GPID])
    con.commit()
    con.close()
    if reader == "scanner":
        assert_one_line_error(call_cli(good, "--reader", reader), good, "try --reader sqlite3")
    else:
        m = report_of(good, reader)["metrics"]
        assert (m["kernel_count"], m["kernel_ns"]) == (3, 15_000_000)
