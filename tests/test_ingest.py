"""Ingestion: both readers agree, the input is untouched, absent tables are 'not captured'."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest import reader as readers
from nsys_diagnose.ingest.database import open_trace

from .conftest import FIXTURES, H200, ROOT, h200_names, needs_shared

TABLES = ["kernels", "memcpys", "memsets", "api_calls", "syncs", "nvtx_ranges", "graph_launches",
          "gpu_busy", "device_busy", "devices", "processes", "threads", "memory_events", "osrt_calls"]


def digest(trace, table: str) -> tuple[int, str]:
    rows = trace.con.execute(f"SELECT * FROM {table}").fetchall()
    return len(rows), hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()


@needs_shared
@pytest.mark.parametrize("name", h200_names())
def test_sqlite3_fallback_reader_gives_identical_tables(name):
    a = open_trace(H200 / f"{name}.sqlite", reader="scanner")  # the suite's shared cache: built once
    b = open_trace(H200 / f"{name}.sqlite", use_cache=False, reader="sqlite3")
    try:
        assert (a.reader, b.reader) == ("scanner", "sqlite3")
        for table in TABLES:
            assert digest(a, table) == digest(b, table), table
    finally:
        a.close()
        b.close()


def test_input_is_byte_identical_after_analysis(tmp_path):
    src = FIXTURES / "exports" / "dataloader_bound.sqlite"
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    for reader in ("scanner", "sqlite3"):
        analyze(src, use_cache=False, reader=reader)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before


def test_cache_is_reused_and_gives_the_same_report(tmp_path):
    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    first = analyze(src, cache_dir=tmp_path)
    second = analyze(src, cache_dir=tmp_path)
    assert not first.input.from_cache and second.input.from_cache
    strip = lambda r: [x.model_dump(exclude={"seconds"}) for x in r.rules]  # noqa: E731
    assert strip(first) == strip(second)
    assert len(list(tmp_path.glob("*.duckdb"))) == 1


def test_the_scanner_signature_is_checked_once_per_installed_binary(tmp_path, monkeypatch):
    """The first ingest checks the binary's signature and records it beside the cache; a later
    process skips the check for that binary only: no record, or one naming another, keeps it on."""
    ext = readers.scanner_extension_path()
    if ext is None:
        pytest.skip("the scanner wheel is not installed")
    monkeypatch.setattr(readers, "_verified", set())  # as in a new process
    assert readers.ingest_config(tmp_path) == {}
    open_trace(FIXTURES / "exports" / "compute_fp32.sqlite", cache_dir=tmp_path).close()
    monkeypatch.setattr(readers, "_verified", set())
    assert readers.ingest_config(tmp_path) == {"allow_unsigned_extensions": True}
    assert readers.ingest_config(tmp_path / "elsewhere") == {}
    (tmp_path / readers.VERIFIED_RECORD).write_text(repr((ext, 1, 2, 3)))
    assert readers.ingest_config(tmp_path) == {}


def test_absent_tables_are_not_captured():
    trace = open_trace(FIXTURES / "exports" / "compute_fp32.sqlite", use_cache=False)
    try:
        assert trace.captured["kernels"] and not trace.captured["memcpys"] and not trace.captured["memsets"]
    finally:
        trace.close()


def test_an_ingest_out_of_memory_under_the_cap_is_redone_with_more(monkeypatch):
    import nsys_diagnose.ingest.database as database
    import nsys_diagnose.ingest.environment as environment
    limits = []
    real = database._build

    def spy(path, out, reader_kind, memory_limit, last_try=False, **options):
        limits.append(memory_limit)
        return real(path, out, reader_kind, memory_limit, last_try, **options)

    monkeypatch.setattr(environment, "MEMORY_LIMIT", "1MB")  # too little for any join
    monkeypatch.setattr(database, "_build", spy)
    report = analyze(FIXTURES / "exports" / "compute_fp32.sqlite", use_cache=False)
    assert limits == ["1MB", database.RETRY_MEMORY_LIMIT]
    assert report.metrics.kernel_count > 0  # the tables are whole
    # the rules' connection starts at the same 1 MB cap: a query that runs out is redone with more
    assert not [r.id for r in report.rules if r.status == "error"]


class _MemoryBoundConnection:
    """A connection whose statements run out of memory unless the cap is at least `needs` MB."""

    def __init__(self, needs: int, limit: str):
        self.needs, self.limit, self.runs = needs, limit, []

    def execute(self, sql, params=None):
        import duckdb
        if sql.startswith("SET memory_limit"):
            self.limit = sql.split("'")[1]
            return self
        self.runs.append(self.limit)
        if int(self.limit.removesuffix("MB")) < self.needs:
            raise duckdb.OutOfMemoryException("out of memory")
        return self


def test_an_ingest_statement_out_of_memory_is_redone_once_at_the_raised_cap():
    import duckdb
    from nsys_diagnose.ingest.database import _execute_retrying, _scaled
    retry = _scaled("500MB", 2)
    con = _MemoryBoundConnection(needs=800, limit="500MB")
    _execute_retrying(con, "CREATE TABLE t AS SELECT 1", None, "500MB", retry)
    assert (con.runs, con.limit) == (["500MB", "1000MB"], "500MB")  # the cap is set back for the next one
    con = _MemoryBoundConnection(needs=2000, limit="500MB")
    with pytest.raises(duckdb.OutOfMemoryException):  # then the whole ingest is redone (test above)
        _execute_retrying(con, "CREATE TABLE t AS SELECT 1", None, "500MB", retry)
    assert (con.runs, con.limit) == (["500MB", "1000MB"], "500MB")
    con = _MemoryBoundConnection(needs=800, limit="500MB")
    with pytest.raises(duckdb.OutOfMemoryException):  # one transaction, or the last try: not redone
        _execute_retrying(con, "CREATE TABLE t AS SELECT 1", None, "500MB", None)
    assert con.runs == ["500MB"]


def test_threads_follow_the_environment(monkeypatch):
    from nsys_diagnose.errors import UsageError
    monkeypatch.setenv("NSYS_DIAGNOSE_THREADS", "1")
    trace = open_trace(FIXTURES / "exports" / "compute_fp32.sqlite")
    try:
        assert trace.con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    finally:
        trace.close()
    monkeypatch.setenv("NSYS_DIAGNOSE_THREADS", "many")
    with pytest.raises(UsageError, match="NSYS_DIAGNOSE_THREADS='many'"):
        open_trace(FIXTURES / "exports" / "compute_fp32.sqlite")


CONCURRENT_OPEN = """
import os, sys, time
from pathlib import Path
from nsys_diagnose.ingest import reader as readers
from nsys_diagnose.ingest.database import open_trace
while not os.path.exists(sys.argv[3]):  # both processes start the open together
    time.sleep(0.01)
trace = open_trace(sys.argv[1], cache_dir=Path(sys.argv[2]))
print(trace.from_cache)
trace.close()
"""


def test_a_second_process_waits_for_the_first_ones_ingest(tmp_path):
    script, go = tmp_path / "open.py", tmp_path / "go"
    script.write_text(CONCURRENT_OPEN)
    args = [sys.executable, script, FIXTURES / "exports" / "dataloader_bound.sqlite", tmp_path / "cache", go]
    procs = [subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    time.sleep(1.0)  # both have imported and wait
    go.touch()
    outs = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert outs == ["False", "True"]  # one ingested, the other opened its result
    assert len(list((tmp_path / "cache").glob("*.duckdb"))) == 1


def test_a_query_is_redone_with_more_memory_once_and_not_at_the_retry_cap():
    import duckdb
    from nsys_diagnose.ingest.database import with_memory_retry
    calls = []

    def out_of_memory():
        calls.append(1)
        raise duckdb.OutOfMemoryException("out of memory")

    con = duckdb.connect(config={"memory_limit": "100MB"})
    for expected_calls in (2, 1):  # under the cap: redone once; then at the retry cap: not again
        calls.clear()
        with pytest.raises(duckdb.OutOfMemoryException):
            with_memory_retry(con, out_of_memory)
        assert len(calls) == expected_calls


def test_time_lookups_are_the_asof_join():
    """phases.sql's bucketed lookups ("the last row at or before t, on a key", for every GPU
    operation and idle gap) give what an ASOF join gives: 50,000 random probes over random rows,
    with keys of one row and of thousands, rows clustered in time, rows that return NULL, probes
    before a key's first row, after its last, at a row's own time and with no key, and a key whose
    times lie further apart than BIGINT can subtract."""
    import duckdb
    from nsys_diagnose.ingest import sql_library

    text = (ROOT / "analyzer" / "ingest" / "sql" / "phases.sql").read_text()
    stmts = [s.sql for s in sql_library.statements("phases.sql", text) if "time_lookup" in s.sql or "MACRO lookup_" in s.sql]
    con = duckdb.connect(config={"threads": 4, "preserve_insertion_order": False})
    con.execute("CREATE TYPE call_label AS ENUM ('x')")
    # rows: key i % 7 (key 6 has one row), times clustered by the square, a few far-apart ones
    con.execute("""CREATE TABLE nvtx_stack_points AS
        SELECT DISTINCT ON (global_tid, ts) * FROM (
          SELECT CASE WHEN i < 20000 THEN i % 6 ELSE 6 END AS global_tid, ((hash(i) % 3000)::BIGINT ** 2)::BIGINT AS ts,
                 CASE WHEN i % 11 = 0 THEN NULL ELSE i END AS range_id FROM range(20001) r(i)
          UNION ALL SELECT 9, -4611686018427387904, 1 UNION ALL SELECT 9, 4611686018427387904, 2 UNION ALL SELECT 9, 0, 3)""")
    con.execute("""CREATE TABLE steps AS SELECT DISTINCT ON (pid, start_ns) pid, row_number() OVER () AS step,
        start_ns, start_ns + 5 AS end_ns FROM (SELECT i % 3 AS pid, (hash(i * 3) % 100000)::BIGINT AS start_ns FROM range(5000) r(i))""")
    con.execute("""CREATE TABLE nvtx_process_cover AS SELECT pid, start_ns, max(end_ns) OVER w AS cover_end, 7 AS cover_tid
        FROM (SELECT i % 2 AS pid, (hash(i * 5) % 50000)::BIGINT AS start_ns, (hash(i * 5) % 50000)::BIGINT + 300 AS end_ns
              FROM range(3000) r(i)) WINDOW w AS (PARTITION BY pid ORDER BY start_ns ROWS UNBOUNDED PRECEDING)""")
    for stmt in stmts:
        con.execute(stmt)
    con.execute("""CREATE TABLE probes AS SELECT i, CASE WHEN i % 101 = 0 THEN NULL ELSE i % 10 END AS key,
        CASE WHEN i % 13 = 0 THEN ((hash(i) % 3000)::BIGINT ** 2)::BIGINT
             WHEN i % 17 = 0 THEN 4611686018427387904 + i ELSE (hash(i) % 9100000)::BIGINT - 50000 END AS t
        FROM range(50000) r(i)""")

    def bucketed(side: int, value: str) -> str:
        return f"""SELECT p.i, r.{value} FROM probes p
            LEFT JOIN time_lookup_widths w ON w.side = {side} AND w.k1 = p.key AND w.k2 = 0
            LEFT JOIN time_lookup_buckets b ON b.side = {side} AND b.k1 = p.key AND b.k2 = 0
              AND b.b = lookup_bucket(p.t, w.t0, w.w, w.last_b)
            LEFT JOIN time_lookup_rows r ON r.side = {side} AND r.i = lookup_row(b.ts, b.first_i, b.prior, p.t)"""

    cases = [(bucketed(2, "v1"), "SELECT p.i, s.range_id FROM probes p ASOF LEFT JOIN nvtx_stack_points s ON s.global_tid = p.key AND s.ts <= p.t"),
             (bucketed(1, "v1"), "SELECT p.i, s.step FROM probes p ASOF LEFT JOIN steps s ON s.pid = p.key AND s.start_ns <= p.t"),
             (bucketed(4, "v1"), "SELECT p.i, c.cover_end FROM probes p ASOF LEFT JOIN nvtx_process_cover c ON c.pid = p.key AND c.start_ns <= p.t")]
    for mine, reference in cases:
        assert con.execute(f"SELECT count(*) FROM ({mine}) WHERE v1 IS NOT NULL").fetchone()[0] > 1000
        for a, b in ((mine, reference), (reference, mine)):
            assert con.execute(f"SELECT count(*) FROM ({a} EXCEPT ALL {b})").fetchone()[0] == 0, (a, b)


def test_gpu_openers_stream_is_the_partitioned_window():
    """normalize.sql's gpu_openers runs its running max as one sorted stream over every (device,
    process); on 200,000 random operations (overlapping, touching, zero-length, tied, NULL device,
    process or end) across four threads it gives the partitioned window's rows exactly."""
    import duckdb
    from nsys_diagnose.ingest import sql_library

    text = (ROOT / "analyzer" / "ingest" / "sql" / "normalize.sql").read_text()
    [stmt] = [s.sql for s in sql_library.statements("normalize.sql", text) if "CREATE TABLE gpu_openers" in s.sql]
    con = duckdb.connect(config={"threads": 4, "preserve_insertion_order": False})
    con.execute("""CREATE TABLE gpu_activity AS
        SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE i % 3 END AS device_id,
               CASE WHEN i % 89 = 0 THEN NULL ELSE 100 + i % 2 END AS pid, 7 AS global_pid,
               (hash(i) % 5000000)::BIGINT * 10 AS start_ns,
               CASE WHEN i % 83 = 0 THEN NULL ELSE (hash(i) % 5000000)::BIGINT * 10 + (hash(i * 7) % 4) * 40 END AS end_ns,
               CASE WHEN i % 5 = 0 THEN NULL ELSE 1 + i % 4 END AS launch_tid, 'kernel' AS kind
        FROM range(200000) r(i)""")
    con.execute(stmt)
    reference = """SELECT * FROM (
        SELECT device_id, pid, global_pid, start_ns, launch_tid, kind,
               max(end_ns) OVER w AS prev_end, row_number() OVER w AS rn FROM gpu_activity
        WINDOW w AS (PARTITION BY device_id, pid ORDER BY start_ns, launch_tid NULLS LAST, end_ns
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
        WHERE prev_end IS NULL OR start_ns > prev_end"""
    assert con.execute("SELECT count(*) FROM gpu_openers").fetchone()[0] > 1000
    for a, b in (("gpu_openers", f"({reference})"), (f"({reference})", "gpu_openers")):
        assert con.execute(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})").fetchone()[0] == 0
