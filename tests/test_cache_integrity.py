"""The caches serve only what provably belongs to the bytes on disk (issue 18, class 1).

- A cached report or ingest is keyed by the SHA-256 of the whole export, remembered by its stat
  identity (device, inode, size, mtime_ns, ctime_ns): an edit that keeps the size, the header's
  change counter and even the mtime is seen.
- A damaged cache entry (a changed byte in a report, a corrupt block in a database, a pipe where
  an entry should be) is discarded with one line on stderr, and rebuilt.
- What a killed run left (temporary databases, their WAL and spill files, temporary folders) is
  removed by the next run.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest import cache_files, identity
from nsys_diagnose.ingest.cache_key import content_key

from .cli_harness import call_cli, leftovers
from .conftest import FIXTURES, ROOT
from .synth import write_export
from .test_bad_inputs import GPID, GTID

KERNELS = 1500


def padded_export(path: Path) -> Path:
    """1,500 1-us kernels between two padding tables (1.1 MB before, 3 MB after), in WAL mode
    and checkpointed: an UPDATE of every kernel then changes only bytes 1.14 to 1.2 MB into the
    4.3 MB file, which the old sampled key (17 blocks of 64 kB) did not read, and in WAL mode
    it leaves the header, change counter included, as it was."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE PAD1(x BLOB)")
    con.executemany("INSERT INTO PAD1 VALUES (?)", [(bytes([i % 251]) * 1000,) for i in range(1100)])
    con.commit()
    con.close()
    write_export({
        "StringIds": [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 2, "value": "my_kernel"}],
        "CUPTI_ACTIVITY_KIND_RUNTIME": [{"start": 1_000_000 + i * 100_000, "end": 1_005_000 + i * 100_000,
                                         "eventClass": 0, "globalTid": GTID, "correlationId": i + 1, "nameId": 1,
                                         "returnValue": 0} for i in range(KERNELS)],
        "CUPTI_ACTIVITY_KIND_KERNEL": [{"start": 1_010_000 + i * 100_000, "end": 1_011_000 + i * 100_000,
                                        "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": i + 1,
                                        "globalPid": GPID, "demangledName": 2, "shortName": 2}
                                       for i in range(KERNELS)]}, path)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE PAD2(x BLOB)")
    con.executemany("INSERT INTO PAD2 VALUES (?)", [(bytes([i % 241]) * 1000,) for i in range(3000)])
    con.commit()
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    return path


def kernel_ns(r) -> tuple[bool, int]:
    assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
    doc = json.loads(r.stdout)
    return doc["input"]["report_from_cache"], doc["metrics"]["kernel_ns"]


def run(path: Path, cache: Path, *args):
    """The JSON report; one rule unless `args` select others (the cache is what is tested)."""
    chosen = [] if "--select" in args else ["--select", "hot-kernels"]
    return call_cli(path, "--format", "json", "--fail-on", "never", "--cache-dir", cache, *chosen, *args)


def test_a_same_size_edit_in_wal_mode_is_never_served_from_the_cache(tmp_path):
    path = padded_export(tmp_path / "run.sqlite")
    cache = tmp_path / "cache"
    assert kernel_ns(run(path, cache)) == (False, KERNELS * 1_000)
    assert kernel_ns(run(path, cache)) == (True, KERNELS * 1_000)
    size, head = path.stat().st_size, path.read_bytes()[:100]
    con = sqlite3.connect(path)
    con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + 60000')
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    assert (path.stat().st_size, path.read_bytes()[:100]) == (size, head)  # size and header as they were
    assert kernel_ns(run(path, cache)) == (False, KERNELS * 60_000)


def one_kernel_export(folder: Path) -> tuple[Path, Path]:
    """An export of one kernel named kernel_aaaa (bytes to overwrite in place), and a cache folder."""
    path = write_export({"StringIds": [{"id": 1, "value": "kernel_aaaa"}],
                         "CUPTI_ACTIVITY_KIND_KERNEL": [{"start": 10, "end": 20, "deviceId": 0, "globalPid": GPID,
                                                         "demangledName": 1, "shortName": 1}]},
                        folder / "run.sqlite")
    return path, folder / "cache"


def test_an_in_place_edit_that_restores_the_mtime_is_seen(tmp_path, monkeypatch):
    """Bytes overwritten in place, then `touch -r` back to the old mtime: the ctime still moves."""
    monkeypatch.setattr(identity, "MARGIN_NS", 0)  # remember identities at once (no 2 s wait)
    path, cache = one_kernel_export(tmp_path)
    first = content_key(path, cache)
    assert list((cache / "ids").iterdir())  # remembered by identity
    st = path.stat()
    data = path.read_bytes()
    at = data.index(b"kernel_aaaa")
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"kernel_bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert content_key(path, cache) != first


def test_an_in_place_edit_through_a_shared_mmap_is_seen(tmp_path, monkeypatch):
    """Issue 36: a program that rewrites the export through a shared memory map keeps its size;
    the kernel dates the write (mtime and ctime) on the first write fault, so the identity moves.
    tmpfs does not: docs/reference.md says to use --no-cache there, and this test says so."""
    monkeypatch.setattr(identity, "MARGIN_NS", 0)
    disk = Path(tempfile.mkdtemp(dir="/var/tmp")) if os.path.isdir("/var/tmp") else tmp_path  # the suite's tmp is tmpfs
    try:
        _edit_through_mmap(disk)
    finally:
        if disk != tmp_path:
            shutil.rmtree(disk)


def _edit_through_mmap(tmp_path: Path) -> None:
    import mmap

    path, cache = one_kernel_export(tmp_path)
    first = content_key(path, cache)
    before = path.stat()
    time.sleep(0.05)  # past the file system's timestamp tick (identity.MARGIN_NS covers this in use)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_WRITE) as m:
        at = m.find(b"kernel_aaaa")
        m[at:at + 11] = b"kernel_bbbb"
        m.flush()
    after = path.stat()
    if (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns):
        pytest.skip("this file system does not date writes through a memory map (tmpfs): the documented limit")
    assert after.st_size == before.st_size and content_key(path, cache) != first


def test_a_fresh_file_is_not_remembered_by_its_identity(tmp_path):
    """Changed less than MARGIN_NS before it was hashed: a second write in the same timestamp
    tick could keep the identity, so the identity does not vouch for it."""
    path = write_export({"StringIds": [{"id": 1, "value": "x"}]}, tmp_path / "new.sqlite")
    identity.identify(path, tmp_path / "ids")
    assert not (tmp_path / "ids").exists()


def cached_db(cache: Path) -> Path:
    (db,) = cache.glob("*.duckdb")
    return db


def test_a_changed_cache_database_is_discarded_and_rebuilt(tmp_path):
    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    cache = tmp_path / "cache"
    first = run(src, cache, "--select", "hot-kernels")
    db = cached_db(cache)
    data = bytearray(db.read_bytes())
    for i in range(300_000, 304_000):  # a block overwritten in place
        data[i] ^= 0x5A
    db.write_bytes(bytes(data))
    r = run(src, cache, "--select", "gpu-idle-gaps")  # another report: the ingest cache is read
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 0 and len(lines) == 1 and str(db) in lines[0] and "discarded, rebuilding" in lines[0]
    assert json.loads(r.stdout)["input"]["from_cache"] is False
    again = run(src, cache, "--select", "hot-kernels", "--no-cache")
    assert json.loads(again.stdout)["metrics"] == json.loads(first.stdout)["metrics"]
    assert run(src, cache, "--select", "transfer-share").stderr == ""  # the rebuilt file verifies


def test_blocks_corrupt_behind_a_valid_checksum_file_are_rebuilt(tmp_path):
    """Bit rot the sum cannot see (its hash and identity rewritten to match): DuckDB's own block
    checksums fail, on opening or in a query, and the run rebuilds the file and answers, with
    one line naming it."""
    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    cache = tmp_path / "cache"
    expected = json.loads(run(src, cache, "--select", "hot-kernels", "--no-cache").stdout)["metrics"]
    run(src, cache, "--select", "hot-kernels")
    db = cached_db(cache)
    data = bytearray(db.read_bytes())
    for i in range(12_288, len(data), 4096):  # every block past DuckDB's file headers
        data[i + 100] ^= 0xFF
    db.write_bytes(bytes(data))
    st = db.stat()
    cache_files.sum_file(db).write_text(json.dumps({"sha256": cache_files.file_sha256(db),
                                                    "identity": identity.stat_identity(st)}))
    r = run(src, cache, "--select", "fp32-gemm")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 0 and len(lines) == 1, r.stderr
    assert str(db) in lines[0] and "corrupt" in lines[0].lower() and "internal error" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["metrics"] == expected and doc["rules"][0]["status"] != "error"


def test_a_block_found_corrupt_by_a_query_is_rebuilt_and_the_query_redone(tmp_path, monkeypatch):
    """The path where the file opens and only a later query meets the bad block (the rules' own
    error handling must not swallow it as a rule error)."""
    import duckdb
    from nsys_diagnose.engine import runner

    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    analyze(src, cache_dir=tmp_path, select=["hot-kernels"])
    real, calls = runner.bounds.bounded, []

    def corrupt_once(cursor, sql, args):
        calls.append(1)
        if len(calls) == 1:
            raise duckdb.IOException("IO Error: Corrupt database file: computed checksum 1 does not match stored "
                                     "checksum 2 in block at location 274432")
        return real(cursor, sql, args)

    monkeypatch.setattr(runner.bounds, "bounded", corrupt_once)
    report = analyze(src, cache_dir=tmp_path, select=["fp32-gemm"])
    assert len(calls) == 2 and report.rules[0].status != "error" and not report.input.from_cache


def test_a_damaged_report_entry_is_discarded(tmp_path):
    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    cache = tmp_path / "cache"
    first = json.loads(run(src, cache).stdout)
    (entry,) = (cache / "reports").glob("*.json")
    text = entry.read_text()
    digit = text.index('"kernel_count": ') + len('"kernel_count": ')
    entry.write_text(text[:digit] + "9" + text[digit + 1:])  # still JSON, one digit off
    r = run(src, cache)
    assert len(r.stderr.strip().splitlines()) == 1 and str(entry) in r.stderr and "checksum" in r.stderr
    doc = json.loads(r.stdout)
    assert not doc["input"]["report_from_cache"] and doc["metrics"] == first["metrics"]


def test_pipes_where_cache_entries_belong_do_not_hang_the_run(tmp_path):
    src = FIXTURES / "exports" / "compute_fp32.sqlite"
    cache = tmp_path / "cache"
    run(src, cache)
    entries = [*cache.glob("*.duckdb"), *cache.glob("*.sum"), *cache.glob(".*.lock"), *(cache / "reports").iterdir(),
               *(cache / "ids").iterdir()]
    assert len(entries) == 5
    for p in entries:
        p.unlink()
        os.mkfifo(p)
    r = run(src, cache)
    assert r.returncode == 0 and json.loads(r.stdout)["metrics"]["kernel_count"] > 0
    assert all("discarded, rebuilding" in line for line in r.stderr.strip().splitlines())
    assert run(src, cache).stderr == "" and json.loads(run(src, cache).stdout)["input"]["report_from_cache"]


def test_what_a_killed_ingest_left_is_swept(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    key = "0" * 32
    orphans = [cache / f".{key}.duckdb.4242.tmp", cache / f".{key}.duckdb.4242.tmp.wal"]
    for p in orphans:
        p.write_bytes(b"half an ingest")
    (cache / f".{key}.duckdb.4242.tmp.spill").mkdir()
    (cache / f".{key}.duckdb.4242.tmp.spill" / "spill.block").write_bytes(b"x")
    old = cache / "reports" / ".abc.json.x1y2.tmp"
    old.parent.mkdir()
    old.write_text("torn")
    os.utime(old, (0, 0))
    fresh = cache / "reports" / ".def.json.z3.tmp"  # a write in progress elsewhere: left alone
    fresh.write_text("being written")
    held = cache / f".{'1' * 32}.duckdb.777.tmp"  # its key is locked: an ingest still running
    held.write_bytes(b"in progress")
    with cache_files.exclusive(cache / f".{'1' * 32}.lock"):
        r = run(FIXTURES / "exports" / "dataloader_bound.sqlite", cache, "--select", "hot-kernels")
    assert r.returncode == 0, r.stderr
    assert not any(p.exists() for p in [*orphans, old, cache / f".{key}.duckdb.4242.tmp.spill"])
    assert fresh.exists() and held.exists()
    held.unlink()
    fresh.unlink()
    assert leftovers(cache) == []


KILLED = """
import os, sys
from pathlib import Path
from nsys_diagnose.ingest import database
real = database._build
def build_then_die(*a, **k):
    real(*a, **k)
    os._exit(9)  # killed after the temporary database is written, before it is sealed
database._build = build_then_die
database.open_trace(sys.argv[1], use_cache=sys.argv[2] != "-", cache_dir=Path(sys.argv[2]) if sys.argv[2] != "-" else None)
"""


@pytest.mark.parametrize("cached", [True, False])
def test_a_really_killed_ingest_leaves_nothing_behind_the_next_run(tmp_path, cached):
    src = FIXTURES / "exports" / "dataloader_bound.sqlite"
    cache = tmp_path / "cache"
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    died = subprocess.run([sys.executable, "-c", KILLED, src, str(cache) if cached else "-"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert died.returncode == 9, died.stderr
    left = leftovers(cache) if cached else list(temp.iterdir())
    assert left, "the killed run left nothing: the test would prove nothing"
    ok = subprocess.run([sys.executable, "-m", "nsys_diagnose", src, "--select", "hot-kernels", "--fail-on", "never",
                         *(["--cache-dir", cache] if cached else ["--no-cache"])],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert (leftovers(cache) if cached else list(temp.iterdir())) == []


def test_the_report_cache_still_answers_without_hashing_an_unchanged_export(tmp_path, monkeypatch):
    """The third run of an unchanged, settled export reads neither the export nor the database."""
    monkeypatch.setattr(identity, "MARGIN_NS", 0)
    path = tmp_path / "run.sqlite"
    shutil.copyfile(FIXTURES / "exports" / "compute_fp32.sqlite", path)
    cache = tmp_path / "cache"
    analyze(path, cache_dir=cache)
    calls = []
    real = identity.hashlib.file_digest
    monkeypatch.setattr(identity.hashlib, "file_digest", lambda *a: calls.append(1) or real(*a))
    assert analyze(path, cache_dir=cache).input.report_from_cache and calls == []
    with open(path, "r+b") as f:  # any write: hashed again, and analyzed again
        f.seek(0, 2)
        f.write(bytes(4096))
    assert not analyze(path, cache_dir=cache).input.report_from_cache and calls
    assert tempfile.gettempdir()  # (the suite's temp folder is untouched by this test)


def test_private_folders_of_killed_runs_are_swept_and_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    never_locked = tmp_path / f"{cache_files.TEMP_PREFIX}killed-early"
    never_locked.mkdir()
    os.utime(never_locked, (0, 0))  # killed between mkdtemp and the lock, long ago
    young = tmp_path / f"{cache_files.TEMP_PREFIX}just-made"
    young.mkdir()  # perhaps about to be locked: left alone
    dead = tmp_path / f"{cache_files.TEMP_PREFIX}dead"
    dead.mkdir()
    (dead / ".lock").write_text("")
    (dead / "trace.duckdb").write_bytes(b"x")
    live = cache_files.TempFolder()  # locked by this process: in use
    (live.path / "trace.duckdb").write_bytes(b"x")
    cache_files.sweep_tempdirs()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([young.name, live.path.name])
    live.remove()
    assert sorted(p.name for p in tmp_path.iterdir()) == [young.name]
