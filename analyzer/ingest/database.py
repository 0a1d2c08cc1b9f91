"""Turn an export into a normalized DuckDB database, cached by the input's content identity.

The first run copies the projected columns into a `.duckdb` file (temporary name, then an
atomic rename); later runs on the same unchanged export reopen it in well under a second.
Rules always run on a read-only connection with DuckDB's external access disabled.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterator

import duckdb
from nsys_diagnose.errors import InputError, UsageError
from nsys_diagnose.ingest import nsysrep, schema
from nsys_diagnose.ingest.reader import discover, ingest_config, make_reader, sql_string

CACHE_FORMAT = 2  # bump when the cache layout changes in a way the SQL text does not show
SQLITE_MAGIC = b"SQLite format 3\x00"
# DuckDB's memory cap for the ingest and for the rules' connection; beyond it, it spills to disk.
MEMORY_LIMIT = os.environ.get("NSYS_DIAGNOSE_MEMORY_LIMIT", "500MB")
# An operator that cannot spill (some aggregates and joins) can still run out under the cap: the
# ingest, or the one query, is then redone once with this much, rather than failing.
RETRY_MEMORY_LIMIT = "4GB"

# source table -> alias of its src_* relation in normalize.sql
ALIASES = {
    "StringIds": "strings", "CUPTI_ACTIVITY_KIND_KERNEL": "kernel", "CUPTI_ACTIVITY_KIND_MEMCPY": "memcpy",
    "CUPTI_ACTIVITY_KIND_MEMSET": "memset", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "sync",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": "graph", "CUPTI_ACTIVITY_KIND_RUNTIME": "runtime",
    "NVTX_EVENTS": "nvtx", "OSRT_API": "osrt", "CUDA_GPU_MEMORY_USAGE_EVENTS": "memusage",
    "TARGET_INFO_GPU": "gpu", "TARGET_INFO_CUDA_GPU": "cuda_gpu", "TARGET_INFO_CUDA_DEVICE": "cuda_device",
    "PROCESSES": "processes", "ThreadNames": "threads", "META_DATA_EXPORT": "meta_export",
    "EXPORT_META_DATA": "export_meta", "META_DATA_CAPTURE": "capture", "TARGET_INFO_SYSTEM_ENV": "sysenv",
    "ENUM_CUDA_MEMCPY_OPER": "enum_memcpy", "ENUM_CUDA_MEM_KIND": "enum_memkind",
}

# normalized table -> the source tables it is built from; it is "captured" when any exists.
VIEW_SOURCES = {
    "kernels": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "memcpys": ["CUPTI_ACTIVITY_KIND_MEMCPY"],
    "memsets": ["CUPTI_ACTIVITY_KIND_MEMSET"],
    "graph_launches": ["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "gpu_activity": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                     "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "gpu_busy": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                 "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "device_busy": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "kernel_names": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "steady_busy": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "api_calls": ["CUPTI_ACTIVITY_KIND_RUNTIME"],
    "api_categories": [],
    "syncs": ["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"],
    "nvtx_ranges": ["NVTX_EVENTS"],
    "osrt_calls": ["OSRT_API"],
    "memory_events": ["CUDA_GPU_MEMORY_USAGE_EVENTS"],
    "devices": ["TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU", "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"],
    "processes": [],
    "threads": ["ThreadNames"],
    "trace_window": [],
    "export_meta": ["META_DATA_EXPORT", "EXPORT_META_DATA"],
    "capture_meta": ["META_DATA_CAPTURE"],
    "system_env": ["TARGET_INFO_SYSTEM_ENV"],
    "export_format": [],
    # 20_phases.sql
    "step_patterns": [],
    "phase_settings": [],
    "nvtx_tree": ["NVTX_EVENTS"],
    "steps": ["NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"],
    "steady_state": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                     "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "NVTX_EVENTS"],
    # 21_nvtx.sql, 22_idle_gaps.sql
    "nvtx_range_stats": ["NVTX_EVENTS"],
    "gpu_busy_cum": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                     "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "blocking_calls": ["CUPTI_ACTIVITY_KIND_RUNTIME"],
    "idle_gaps": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "idle_gap_causes": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                        "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    # 40_budget.sql
    "kernel_class_patterns": [],
    "kernel_classes": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "budget_classes": [],
    "budget_settings": [],
    "budget": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
               "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    "steady_summary": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                       "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    # 30_comm.sql
    "comm_collective_names": [],
    "comm_dtype_names": [],
    "comm_nvtx": ["NVTX_EVENTS"],
    "comm_kernels": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "comm_busy": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "comm_compute_busy": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "comm_exposure": ["CUPTI_ACTIVITY_KIND_KERNEL"],
    "comm_instances": ["CUPTI_ACTIVITY_KIND_KERNEL"],
}


@dataclass
class Trace:
    """An opened export: a read-only DuckDB connection over the normalized tables."""

    path: Path
    con: duckdb.DuckDBPyConnection
    captured: dict[str, bool]
    reader: str
    from_cache: bool
    source_tables: list[str] = field(default_factory=list)
    _cleanup: Path | None = None
    report: Path | None = None  # the .nsys-rep that `path` was exported from, if any

    def close(self) -> None:
        self.con.close()
        if self._cleanup is not None:
            self._cleanup.unlink(missing_ok=True)


def check_input(path: Path) -> None:
    """Cheap checks that give one clear line instead of a database error."""
    if not path.exists():
        raise InputError(path, "no such file")
    if path.is_dir():
        raise InputError(path, "is a directory, not an export file")
    if not path.is_file():  # a FIFO would block the open forever; SQLite reads only files anyway
        raise InputError(path, "is not a regular file (a pipe or device cannot hold an export)")
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError as e:
        raise InputError(path, f"cannot be read ({e.strerror or e})") from None
    if not head:
        raise InputError(path, "is empty (0 bytes)")
    if not head.startswith(SQLITE_MAGIC):
        raise InputError(path, "is not a SQLite database (export it with `nsys export --type sqlite`)")
    if len(head) < 100:
        raise InputError(path, "is truncated (shorter than a SQLite header)")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    size = path.stat().st_size
    if page_size and pages and size < page_size * pages:
        raise InputError(path, f"is truncated ({size} bytes, header says {page_size * pages})")
    wal = path.with_name(path.name + "-wal")
    if 2 in (head[18], head[19]) and wal.is_file() and wal.stat().st_size > 0:
        # a read-only open cannot apply them, so the report would silently miss the latest rows
        raise InputError(path, f"has changes not yet written into it ({wal.name}); checkpoint it first "
                               f"(`sqlite3 {path.name} 'PRAGMA wal_checkpoint'`) or copy it with `sqlite3 .backup`")


def content_key(path: Path) -> str:
    """Identity of the export's content for the ingest cache. The SQLite header is the first
    sampled block, and its change counter moves on every write."""
    return nsysrep.sampled_digest(path, _ingest_fingerprint())


def default_cache_dir() -> Path:
    env = os.environ.get("NSYS_DIAGNOSE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nsys-diagnose"


def _sql_files() -> list[tuple[str, str]]:
    """The SQL library files of analyses/sql/, in name order (10_normalize.sql first)."""
    folder = resources.files("nsys_diagnose.analyses").joinpath("sql")
    return sorted((f.name, f.read_text()) for f in folder.iterdir() if f.name.endswith(".sql"))


def _statements(text: str) -> list[str]:
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";\n") if s.strip()]


def _ingest_fingerprint() -> str:
    """Changes whenever what the cache holds could change: the SQL, the projection, the version."""
    h = hashlib.sha256(f"{CACHE_FORMAT}|{duckdb.__version__}|{schema.SOURCES!r}|{schema.ROW_FILTERS!r}".encode())
    for name, text in _sql_files():
        h.update(name.encode() + text.encode())
    return h.hexdigest()


def build(path: Path, out: Path, reader_kind: str = "auto") -> tuple[str, list[str]]:
    """Ingest `path` into a new DuckDB file `out`. Returns (reader used, source tables present)."""
    try:
        return _build(path, out, reader_kind, MEMORY_LIMIT)
    except duckdb.OutOfMemoryException:
        for leftover in (out, Path(str(out) + ".wal")):
            leftover.unlink(missing_ok=True)
        return _build(path, out, reader_kind, RETRY_MEMORY_LIMIT, last_try=True)


def _build(path: Path, out: Path, reader_kind: str, memory_limit: str,
           last_try: bool = False) -> tuple[str, list[str]]:
    tables = discover(path)
    if not any(t in tables for t in schema.NSYS_MARKERS) and not any(t.startswith("CUPTI_") for t in tables):
        raise InputError(path, "is SQLite but not an nsys export (no nsys tables such as StringIds or CUPTI_ACTIVITY_KIND_*)")
    con = duckdb.connect(str(out), config=ingest_config() | thread_config())
    try:
        con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout, into a piped report
        con.execute("SET preserve_insertion_order = false")  # ingest in parallel (ingest.md 4.2)
        # Bounded memory: DuckDB spills joins and sorts beside the cache file instead of
        # growing with the trace (a 1e7-kernel export stays under 1 GB of RSS).
        con.execute(f"SET memory_limit = '{memory_limit}'")
        # Freed memory goes back to the system promptly, so RSS stays near the limit above.
        con.execute("SET allocator_background_threads = true")
        con.execute("SET allocator_flush_threshold = '32MB'")
        con.execute(f"SET temp_directory = {sql_string(str(out) + '.spill')}")
        # DuckDB turns an ASOF join whose left side it estimates at <= 64 rows into a nested loop
        # over the whole right side; a misestimate (a filtered table) made one join of 1e6
        # GPU operations take a minute instead of a second. The sort-merge plan is always linear.
        con.execute("SET asof_loop_join_threshold = 0")
        reader = make_reader(reader_kind, con, path)
        for table, columns in schema.SOURCES.items():
            present = tables.get(table)
            reader.relation(ALIASES[table], table if present is not None else None, columns,
                            present or set(), schema.ROW_FILTERS.get(table))
        for _, text in _sql_files():
            for stmt in _statements(text):
                con.execute(stmt)
        present = sorted(t for t in tables if t in schema.SOURCES or t.startswith("CUPTI_"))
        # one statement per table, not executemany's one per row (~45 ms on every ingest)
        con.execute("CREATE TABLE captured AS SELECT unnest(?::VARCHAR[]) AS view_name, unnest(?::BOOLEAN[]) AS captured",
                    [list(VIEW_SOURCES), [(not srcs) or any(s in tables for s in srcs) for srcs in VIEW_SOURCES.values()]])
        con.execute("CREATE TABLE source_tables AS SELECT unnest(?::VARCHAR[]) AS name", [sorted(tables)])
        con.execute("CREATE TABLE ingest_info(reader VARCHAR, cache_format INTEGER)")
        con.execute("INSERT INTO ingest_info VALUES (?, ?)", [reader.name, CACHE_FORMAT])
        fmt = schema.detect_format(tables)  # decided from the columns present, so it is kept here
        con.execute("CREATE TABLE export_format(export_meta_table VARCHAR, schema_flavour VARCHAR, features VARCHAR[])")
        con.execute("INSERT INTO export_format VALUES (?, ?, ?)",
                    [fmt["export_meta_table"], fmt["schema_flavour"], fmt["features"]])
        con.execute("CHECKPOINT")
        return reader.name, present
    except duckdb.Error as e:
        if isinstance(e, duckdb.OutOfMemoryException) and not last_try:
            raise
        hint = ""
        if isinstance(e, duckdb.TypeMismatchException) and reader_kind != "sqlite3":
            hint = " (try --reader sqlite3, which converts such values)"
        raise InputError(path, f"could not be read: {str(e).splitlines()[0]}{hint}") from None
    finally:
        if hasattr(reader := locals().get("reader"), "close"):
            reader.close()
        con.close()
        shutil.rmtree(str(out) + ".spill", ignore_errors=True)


def _open_readonly(db: Path) -> duckdb.DuckDBPyConnection:
    # No file access, no extension loading, no ATTACH: a rule sees only the normalized tables.
    # Rules are bounded like the ingest (they spill beside the cache file: 1.9 -> 0.9 GB peak RSS
    # for the rule pack at 1e7 kernels), and get the linear ASOF plan (see build()).
    con = duckdb.connect(str(db), read_only=True, config={"enable_external_access": False,
                                                            "autoload_known_extensions": False,
                                                            "autoinstall_known_extensions": False,
                                                            "memory_limit": MEMORY_LIMIT,
                                                            "asof_loop_join_threshold": 0} | thread_config())
    con.execute("SET enable_progress_bar = false")  # see build()
    return con


def thread_config() -> dict:
    """DuckDB's threads per connection: all cores unless NSYS_DIAGNOSE_THREADS says (a batch
    gives each of its worker processes a share, so that N workers do not run N x cores threads)."""
    raw = os.environ.get("NSYS_DIAGNOSE_THREADS")
    if raw is None:
        return {}
    if not (raw.isdigit() and int(raw) > 0):
        raise UsageError(f"NSYS_DIAGNOSE_THREADS={raw!r}: expected a whole number of threads > 0")
    return {"threads": int(raw)}


def with_memory_retry(con: duckdb.DuckDBPyConnection, run):
    """run(), redone once with RETRY_MEMORY_LIMIT on `con` if it ran out of memory under the cap.
    The raised cap stays for the connection's later queries: they work on the same tables."""
    try:
        return run()
    except duckdb.OutOfMemoryException:
        limit = "SELECT current_setting('memory_limit')"
        before = con.execute(limit).fetchone()[0]
        con.execute(f"SET memory_limit = '{RETRY_MEMORY_LIMIT}'")
        if con.execute(limit).fetchone()[0] == before:
            raise  # already at the retry cap (an earlier query raised it): it would fail again
        return run()


def _open_cached(db: Path) -> duckdb.DuckDBPyConnection | None:
    if not db.exists():
        return None
    try:
        return _open_readonly(db)
    except duckdb.Error:
        db.unlink(missing_ok=True)  # a cache from another duckdb or a torn write: rebuild
        return None


def _open_or_build(db: Path, export: Path, reader: str) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """The cache database `db` of `export`, ingested first if absent: (connection, was cached)."""
    if (con := _open_cached(db)) is not None:
        return con, True
    # A second process on the same export waits for the first one's ingest (minutes and a GB
    # on a big export) instead of doing it again, then opens its result.
    with _exclusive(db.with_name(f".{db.stem}.lock")):
        if (con := _open_cached(db)) is not None:
            return con, True
        tmp = db.with_name(f".{db.name}.{os.getpid()}.tmp")
        try:
            build(export, tmp, reader)
            os.replace(tmp, db)
        finally:
            tmp.unlink(missing_ok=True)
            Path(str(tmp) + ".wal").unlink(missing_ok=True)
        return _open_readonly(db), False


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """An exclusive lock on `lock` (a small file left in the cache folder), where the OS has one."""
    try:
        import fcntl
    except ImportError:  # Windows: no wait; both build, and the atomic rename keeps one result
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def open_trace(path: str | os.PathLike, *, use_cache: bool = True, cache_dir: Path | None = None,
               reader: str = "auto") -> Trace:
    p = Path(path)
    if nsysrep.is_report(p):  # export to SQLite with the user's nsys (cached), then read that
        with nsysrep.exported(p, (cache_dir or default_cache_dir()) if use_cache else None) as sqlite:
            trace = open_trace(sqlite, use_cache=use_cache, cache_dir=cache_dir, reader=reader)
        trace.report = p
        return trace
    check_input(p)
    cleanup = None
    from_cache = False
    if use_cache:
        cache_dir = cache_dir or default_cache_dir()
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=cache_dir, delete=True)
            probe.close()
        except OSError:
            use_cache = False
    if use_cache:
        db = cache_dir / f"{content_key(p)}.duckdb"
        con, from_cache = _open_or_build(db, p, reader)
    else:
        fd, name = tempfile.mkstemp(suffix=".duckdb", prefix="nsys-diagnose-")
        os.close(fd)
        db = Path(name)
        db.unlink()  # duckdb wants to create the file itself
        try:
            build(p, db, reader)
        except BaseException:
            db.unlink(missing_ok=True)
            raise
        con = _open_readonly(db)
        cleanup = db
    captured = dict(con.execute("SELECT view_name, captured FROM captured").fetchall())
    used = con.execute("SELECT reader FROM ingest_info").fetchone()[0]
    sources = [r[0] for r in con.execute("SELECT name FROM source_tables").fetchall()]
    return Trace(p, con, captured, used, from_cache, sources, cleanup)
