"""Turn an export into a normalized DuckDB database, cached by the SHA-256 of the export's bytes.

The first run copies the projected columns into a `.duckdb` file (temporary name, then an
atomic rename, with a checksum file beside it: cache_files.py); later runs on the same
unchanged export reopen it in well under a second, once the file is verified. Rules always run
on a read-only connection with DuckDB's external access disabled.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import duckdb
from nsys_diagnose.errors import InputError, NoSpaceError, is_no_space
from nsys_diagnose.files import NotRegularFile, kind, open_regular
from nsys_diagnose.ingest import cache_files, identity, nsysrep, progress, schedule, schema, sql_library
from nsys_diagnose.ingest import settings as analysis_settings
from nsys_diagnose.ingest.cache_key import CACHE_FORMAT, content
from nsys_diagnose.ingest.environment import (
    RULES_MEMORY_LIMIT,
    at_once,
    default_cache_dir,
    memory_limit,
    size_bytes,
    thread_config,
)
from nsys_diagnose.ingest.reader import discover, ingest_config, make_reader, sql_string
from nsys_diagnose.ingest.settings import SettingValues
from nsys_diagnose.text import printable

SQLITE_MAGIC = b"SQLite format 3\x00"
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # a rollback journal's header, zeroed once committed
# An operator that cannot spill (some aggregates and joins) can still run out under the cap: the
# ingest statement is then redone once at STATEMENT_RETRY_FACTOR times the cap (DuckDB's sort under
# gpu_openers at 1e7 operations fails now and then at 500 MB and 750 MB, never at 1 GB), and if
# that fails too, the ingest, or the one query, is redone once with RETRY_MEMORY_LIMIT, rather
# than failing.
STATEMENT_RETRY_FACTOR = 2
RETRY_MEMORY_LIMIT = "4GB"
SMALL_EXPORT_BYTES = 64 << 20  # a smaller export's ingest runs in one thread a statement (_build)
MAX_STATEMENTS_AT_ONCE = 4  # on a small export, statements that do not depend on each other run side by side
NO_PROGRESS_BAR = "SET enable_progress_bar = false"  # DuckDB draws it on stdout, into a piped report
MAX_LABELS = 10_000  # distinct names each name ENUM (label, call_label, short_label) may hold (_label_type)
T = TypeVar("T")
# what a statement makes (after the comment lines that document it)
_LABEL_ENUM = re.compile(r"(?:\s*--[^\n]*\n)*\s*CREATE\s+TYPE\s+(label|call_label|short_label)\s+AS\s+ENUM\b", re.IGNORECASE)
_BUILDS = re.compile(r"(?:\s*--[^\n]*\n)*\s*CREATE\s+(?:TEMP\s+)?(?:TABLE|VIEW)\s+(\w+)", re.IGNORECASE)
# `-- @each name: SELECT ...` above a statement runs it once per row of that query, bound to $name
# (ingest/sql/idle_gaps.sql: one slice of the gaps at a time, within the memory limit).
_EACH = re.compile(r"^\s*--\s*@each\s+(\w+)\s*:\s*(.+)$", re.MULTILINE)


# source table -> alias of its src_* relation in ingest/sql/normalize.sql
ALIASES = {
    "StringIds": "strings", "CUPTI_ACTIVITY_KIND_KERNEL": "kernel", "CUPTI_ACTIVITY_KIND_MEMCPY": "memcpy",
    "CUPTI_ACTIVITY_KIND_MEMSET": "memset", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "sync",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": "graph", "CUPTI_ACTIVITY_KIND_RUNTIME": "runtime",
    "NVTX_EVENTS": "nvtx", "OSRT_API": "osrt", "COMPOSITE_EVENTS": "samples", "SAMPLING_CALLCHAINS": "frames", "CUDA_GPU_MEMORY_USAGE_EVENTS": "memusage",
    "CUDA_UM_CPU_PAGE_FAULT_EVENTS": "um_cpu_faults", "CUDA_UM_GPU_PAGE_FAULT_EVENTS": "um_gpu_faults",
    "TARGET_INFO_GPU": "gpu", "TARGET_INFO_CUDA_GPU": "cuda_gpu", "TARGET_INFO_CUDA_DEVICE": "cuda_device",
    "PROCESSES": "processes", "ThreadNames": "threads", "META_DATA_EXPORT": "meta_export",
    "EXPORT_META_DATA": "export_meta", "META_DATA_CAPTURE": "capture", "TARGET_INFO_SYSTEM_ENV": "sysenv",
    "ENUM_CUDA_MEMCPY_OPER": "enum_memcpy", "ENUM_CUDA_MEM_KIND": "enum_memkind",
}

# Tables the ingest makes in Python rather than in the SQL library, with their sources.
PYTHON_TABLES: dict[str, list[str]] = {"export_format": []}


@functools.cache
def view_sources(modules: tuple[str, ...] | None = None) -> dict[str, list[str]]:
    """Public table -> the nsys tables it is built from (the `-- sources:` line above its CREATE
    in the SQL library); it is "captured" when any of them exists, always when none is listed.
    Only the tables of `modules` (all when None): the others are not in the database."""
    tables = {n: e.sources or [] for n, e in sql_library.public().items()
              if e.kind != "macro" and (modules is None or e.module in modules)}
    return tables | PYTHON_TABLES


@dataclass
class Trace:
    """An opened export: a read-only DuckDB connection over the normalized tables."""

    path: Path
    con: duckdb.DuckDBPyConnection
    captured: dict[str, bool]
    reader: str
    from_cache: bool
    source_tables: list[str] = field(default_factory=list)
    _cleanup: cache_files.TempFolder | None = None
    report: Path | None = None  # the .nsys-rep that `path` was exported from, if any
    db: Path | None = None  # the cache file the tables come from (from_cache), else None

    def close(self) -> None:
        self.con.close()
        if self._cleanup is not None:
            self._cleanup.remove()


def _head(path: Path) -> tuple[bytes, int]:
    """The first 100 bytes and the size of a regular file, opened without blocking."""
    try:
        with open_regular(path) as f:
            return f.read(100), os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except NotRegularFile as e:
        _not_regular(path, e.what)
    except OSError as e:
        with contextlib.suppress(OSError):  # a socket cannot even be opened: say what it is
            if not stat.S_ISREG(mode := os.stat(path).st_mode):
                _not_regular(path, kind(mode))
        raise InputError(path, f"cannot be read ({e.strerror or e})") from None


def _not_regular(path: Path, what: str):
    if what == "a directory":
        raise InputError(path, "is a directory, not an export file")
    raise InputError(path, f"is not a regular file ({what} cannot hold an export)")


def _pending(path: Path, suffix: str, magic: bytes | None = None) -> Path | None:
    """The `-wal` or `-journal` file beside the export when it holds something. One that is a
    pipe or device is refused: SQLite would open it, and block on a pipe."""
    side = path.with_name(path.name + suffix)
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(mode := os.stat(side).st_mode):
            raise InputError(path, f"has {kind(mode)} named {side.name} beside it where SQLite keeps its "
                                   "journal; remove it first")
    try:
        with open_regular(side) as f:
            head = f.read(len(magic) if magic else 1)
    except OSError:
        return None
    return side if head and (magic is None or head == magic) else None


def check_input(path: Path) -> None:
    """Cheap checks that give one clear line instead of a database error."""
    head, size = _head(path)
    if not head:
        raise InputError(path, "is empty (0 bytes)")
    if not head.startswith(SQLITE_MAGIC):
        raise InputError(path, "is not a SQLite database (export it with `nsys export --type sqlite`)")
    if len(head) < 100:
        raise InputError(path, "is truncated (shorter than a SQLite header)")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    # The page count in the header is valid only while its version-valid-for number equals the
    # change counter; an older writer leaves it stale, and SQLite then goes by the file size.
    if page_size and pages and head[24:28] == head[92:96] and size < page_size * pages:
        raise InputError(path, f"is truncated ({size} bytes, header says {page_size * pages})")
    if 2 in (head[18], head[19]) and (wal := _pending(path, "-wal")):
        # a read-only open cannot apply them, so the report would silently miss the latest rows
        raise InputError(path, f"has changes not yet written into it ({wal.name}); checkpoint it first "
                               f"(`sqlite3 {path.name} 'PRAGMA wal_checkpoint'`) or copy it with `sqlite3 .backup`")
    _pending(path, "-shm")
    if journal := _pending(path, "-journal", JOURNAL_MAGIC):
        # a transaction that did not finish: the file holds part of it, and only a writable open
        # rolls it back. Read as it is, the report would show changes that never happened.
        raise InputError(path, f"has an unfinished transaction ({journal.name}, a hot journal); open it once "
                               f"with sqlite3 to roll it back (`sqlite3 {path.name} 'PRAGMA quick_check'`), "
                               "or export it again")


def modules_for(names: set[str] | frozenset[str] | None) -> tuple[str, ...] | None:
    """The SQL modules that make the tables and macros `names`, in run order; None (all of
    them) when names is None or they need every module."""
    if names is None:
        return None
    chosen = tuple(sql_library.plan(names))
    return None if len(chosen) == len(sql_library.modules()) else chosen


def _sql_files(modules: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    return sql_library.files(modules)


def _statements(text: str) -> list[str]:
    """A library file's statements, as DuckDB's parser splits them."""
    return [st.sql for st in sql_library.statements("", text)]


def build(path: Path, out: Path, reader_kind: str = "auto",
          modules: tuple[str, ...] | None = None, settings: SettingValues | None = None) -> tuple[str, list[str]]:
    """Ingest `path` into a new DuckDB file `out`, running the SQL modules `modules` (all when
    None) and those they include, with the settings' values changed as `settings` says.
    Returns (reader used, source tables present)."""
    try:
        return _build(path, out, reader_kind, memory_limit(), modules=modules, settings=settings)
    except duckdb.OutOfMemoryException:
        for leftover in (out, Path(str(out) + ".wal")):
            leftover.unlink(missing_ok=True)
        return _build(path, out, reader_kind, RETRY_MEMORY_LIMIT, last_try=True, modules=modules, settings=settings)


def _statements_of(modules: tuple[str, ...] | None,
                   settings: SettingValues | None) -> list[tuple[str, str | None, dict | None]]:
    """The ingest's statements, (module, SQL, None), in the order they run; right after the
    settings module's, (module, None, {setting: value}) for the settings the run changes, which
    the ingest writes over their rows (_set_values), so the SQL that reads a setting reads it."""
    out: list[tuple[str, str | None, dict | None]] = []
    changed = analysis_settings.ingest_changes(settings)
    for name, text in _sql_files(modules):
        module = name.removesuffix(".sql")
        out += [(module, stmt, None) for stmt in _statements(text)]
        if module == "settings" and changed:
            out.append((module, None, changed))
    return out


def _set_values(con: duckdb.DuckDBPyConnection, changed: dict[str, int | float]) -> None:
    """Each changed setting's value over its row of `settings`, as constants (checked values of
    declared settings; nothing is pasted into SQL)."""
    for name, value in changed.items():
        con.table("settings").update({"value": duckdb.ConstantExpression(float(value))},
                                     condition=duckdb.ColumnExpression("name") == duckdb.ConstantExpression(name))


def _build(path: Path, out: Path, reader_kind: str, memory_limit: str, last_try: bool = False,
           modules: tuple[str, ...] | None = None, settings: SettingValues | None = None) -> tuple[str, list[str]]:
    tables = discover(path)
    if not any(t in tables for t in schema.NSYS_MARKERS) and not any(t.startswith("CUPTI_") for t in tables):
        raise InputError(path, "is SQLite but not an nsys export (no nsys tables such as StringIds or CUPTI_ACTIVITY_KIND_*)")
    missing = schema.missing_columns(tables)
    if missing:
        raise InputError(path, f"table {missing[0]} lacks its column {missing[1]}, which every nsys export has")
    small = path.stat().st_size < SMALL_EXPORT_BYTES
    workers = _workers(small)
    # Side by side (_side_by_side), each statement commits on its own: in a database in memory,
    # where that costs nothing, copied into `out` at the end. In the file, each commit writes and
    # syncs the WAL, intermediates included: launch_bound's cold run took 0.6 s longer.
    target = ":memory:" if workers > 1 else str(out)
    # Bounded memory: DuckDB spills joins and sorts beside the cache file instead of growing
    # with the trace (a 1e7-kernel export stays under 1 GB of RSS). Set in the config, not in SQL.
    con = duckdb.connect(target, config=ingest_config(out.parent) | thread_config(small) | {
        "memory_limit": memory_limit,
        "temp_directory": str(out) + ".spill",
        "preserve_insertion_order": False,  # ingest in parallel (ingest.md 4.2)
        # Freed memory goes back to the system promptly, so RSS stays near the limit above.
        "allocator_background_threads": True,
        "allocator_flush_threshold": "32MB",
        # DuckDB turns an ASOF join whose left side it estimates at <= 64 rows into a nested loop
        # over the whole right side, so a misestimate (a filtered table) turns one join of 1e6 GPU
        # operations from a second into a minute. The sort-merge plan is always linear.
        "asof_loop_join_threshold": 0})
    try:
        con.execute(NO_PROGRESS_BAR)
        reader = make_reader(reader_kind, con, path, out.parent, temp=workers == 1)
        for table, columns in schema.SOURCES.items():
            present = tables.get(table)
            progress.stage(f"reading {table}")
            reader.relation(ALIASES[table], table if present is not None else None, columns,
                            present or set(), schema.ROW_FILTERS.get(table))
        _check_strings(con, path)
        # On a small export each statement's own commit costs more than its work (up to a tenth of
        # the run); on a big one a single transaction would hold every dropped intermediate until
        # the end (a 1e7-kernel ingest then needs 4 GB). So one transaction only below SMALL_EXPORT_BYTES,
        # unless its statements run side by side, each on a cursor of its own (_side_by_side).
        one_transaction = small and workers == 1
        if one_transaction:
            con.begin()
        statements = _statements_of(modules, settings)
        # a failed statement aborts a transaction, so only statements committed one by one are
        # redone; side by side, the raised cap would be every running statement's
        retry_limit = None if small or last_try else _scaled(memory_limit, STATEMENT_RETRY_FACTOR)
        done: list = [None, None]  # the rows and name of the last table built, for the progress line

        def step(cur: duckdb.DuckDBPyConnection, i: int, name: str, stmt: str | None, changed: dict | None) -> None:
            if stmt is None:  # the settings this run changes
                _set_values(cur, changed or {})
                return
            built = _BUILDS.match(stmt)
            if built:
                progress.stage(f"ingest {name}: {built[1]} ({i}/{len(statements)})", *done)
            each = _EACH.search(stmt)
            if each:
                values = [r[0] for r in cur.execute(each[2]).fetchall()]
                for n, value in enumerate(values, 1):
                    progress.stage(f"ingest {name}: {each[1]} {n}/{len(values)} ({i}/{len(statements)})")
                    _execute_retrying(cur, stmt, {each[1]: value}, memory_limit, retry_limit)
                return
            result = _execute_retrying(cur, _label_type(cur, stmt), None, memory_limit, retry_limit)
            if built:
                row = result.fetchone()  # CREATE TABLE ... AS answers with its row count
                done[:] = (row[0] if row and isinstance(row[0], int) else None, built[1])

        if workers > 1:
            _side_by_side(con, statements, workers, step, [(reader.kind, f"src_{a}") for a in ALIASES.values()])
        else:
            for i, (name, stmt, changed) in enumerate(statements, 1):
                step(con, i, name, stmt, changed)
        present = sorted(t for t in tables if t in schema.SOURCES or t.startswith("CUPTI_"))
        # each table in one statement, its values in one JSON text parameter: executemany costs
        # ~45 ms on every ingest, list parameters ~10 ms (and the export's table names may hold anything)
        con.execute("CREATE TABLE captured AS SELECT unnest(from_json(?, '[\"VARCHAR\"]')) AS view_name, "
                    "unnest(from_json(?, '[\"BOOLEAN\"]')) AS captured",
                    [json.dumps(list(view_sources(modules))),
                     json.dumps([(not srcs) or any(s in tables for s in srcs) for srcs in view_sources(modules).values()])])
        con.execute("CREATE TABLE source_tables AS SELECT unnest(from_json(?, '[\"VARCHAR\"]')) AS name",
                    [json.dumps(sorted(tables))])
        con.execute("CREATE TABLE ingest_info AS SELECT ?::VARCHAR AS reader, ?::INTEGER AS cache_format",
                    [reader.name, CACHE_FORMAT])
        fmt = schema.detect_format(tables)  # decided from the columns present, so it is kept here
        con.execute("CREATE TABLE export_format AS SELECT ?::VARCHAR AS export_meta_table, "
                    "?::VARCHAR AS schema_flavour, ?::VARCHAR[] AS features",
                    [fmt["export_meta_table"], fmt["schema_flavour"], fmt["features"]])
        progress.stage("writing the cache", *done)
        if one_transaction:
            con.commit()
        if workers > 1:  # (the detach checkpoints it)
            con.execute(f"ATTACH {sql_string(str(out))} AS cache; COPY FROM DATABASE memory TO cache; DETACH cache")
        else:
            con.checkpoint()
        return reader.name, present
    except (duckdb.Error, OSError) as e:
        if is_no_space(e):  # the folder written to is full, not the export bad
            raise NoSpaceError(out.parent, "no space left to write the ingest database") from None
        if isinstance(e, OSError):
            raise
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


def _workers(small: bool) -> int:
    """How many ingest statements run at once: on a small export, where a statement is mostly
    DuckDB planning it on one core, as many as the cores or the threads NSYS_DIAGNOSE_THREADS
    gives, at most MAX_STATEMENTS_AT_ONCE (as the rules do, engine/runner.py); one on a big one,
    where each statement already uses every core."""
    return at_once(MAX_STATEMENTS_AT_ONCE) if small else 1


def _side_by_side(con: duckdb.DuckDBPyConnection, statements: list[tuple[str, str | None, dict | None]],
                  workers: int, step: Callable[..., None], relations: list[tuple[str, str]]) -> None:
    """step(cursor, i, module, SQL, changed) for each statement, on `workers` cursors, each as soon
    as the statements it depends on have ended (sql_library.dependencies). A cursor is a
    connection of its own, which sees no other's temporary objects: what the library makes TEMP
    is made in the database instead, and dropped at the end with the reader's `relations`
    (kind, name), so that the cache holds what the sequential ingest leaves."""
    made = list(relations)
    steps, accesses = [], []
    for i, (name, stmt, changed) in enumerate(statements, 1):
        if stmt is None:  # _set_values writes over rows of `settings`
            accesses.append(sql_library.Access("settings", {"settings"}))
        else:
            stmt, temp = sql_library.without_temp(stmt)
            made += [temp] if temp else []
            each = _EACH.search(stmt)
            accesses.append(sql_library.access(stmt, each[2] if each else ""))
        steps.append((i, name, stmt, changed))
    cursors = [con.cursor() for _ in range(workers)]
    try:
        for cur in cursors:
            cur.execute(NO_PROGRESS_BAR)  # a setting of each connection
        schedule.run(steps, sql_library.dependencies(accesses), cursors, lambda cur, s: step(cur, *s))
    finally:
        for cur in cursors:
            cur.close()
    for what, name in made:
        con.execute(f"DROP {what} IF EXISTS {name}")


def _scaled(limit: str, factor: float) -> str:
    """A memory limit in memory_limit()'s form times `factor`, in MB."""
    return f"{size_bytes(limit) * factor / 1e6:.0f}MB"


def _execute_retrying(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None, limit: str,
                      retry_limit: str | None) -> duckdb.DuckDBPyConnection:
    """One ingest statement; if it ran out of memory (and was rolled back), redone once at
    `retry_limit`, the cap then set back to `limit` for the statements after it."""
    try:
        return con.execute(sql, params)
    except duckdb.OutOfMemoryException:
        if retry_limit is None:
            raise
    _set_memory_limit(con, retry_limit)
    try:
        return con.execute(sql, params)
    finally:
        _set_memory_limit(con, limit)


def _set_memory_limit(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """`limit`: memory_limit()'s form or one derived from it (never text from outside)."""
    con.execute(f"SET memory_limit = '{limit}'")


def _label_type(con: duckdb.DuckDBPyConnection, stmt: str) -> str:
    """The statement, except that `label`, `call_label` or `short_label` (normalize.sql) is plain
    text when one of its values holds a NUL: DuckDB re-parses an ENUM's type text to sort it, and the NUL cuts
    it; or when it would have more than MAX_LABELS values: binding a statement that reads a label
    column costs time in the ENUM's size (1e5 distinct kernel names: a 4 s ingest took 46 s,
    1e6 did not end in 5 minutes, issue 36), where text costs a little in every row."""
    found = _LABEL_ENUM.match(stmt)
    if found and con.execute(f"SELECT bool_or(contains(v, chr(0))) OR count(*) > ? FROM {found[1]}_values",
                             [MAX_LABELS]).fetchone()[0]:
        return f"CREATE TYPE {found[1]} AS VARCHAR"
    return stmt


def _check_strings(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """StringIds maps an id to one string. Two rows with one id and different strings (no nsys
    writes them) would give every kernel, API call and range with that id two names, each row
    counted twice; the same string twice is harmless and read once."""
    row = con.execute("SELECT id, count(DISTINCT value) FROM src_strings WHERE id IS NOT NULL "
                      "GROUP BY id HAVING count(DISTINCT value) > 1 ORDER BY id LIMIT 1").fetchone()
    if row:
        raise InputError(path, f"StringIds holds {row[1]} different strings for id {row[0]}; an export has one "
                               "per id (the file was edited or merged)")


def _open_readonly(db: Path) -> duckdb.DuckDBPyConnection:
    # No file access, no extension loading, no ATTACH: a rule sees only the normalized tables.
    # Rules are bounded too (RULES_MEMORY_LIMIT: they spill beside the cache file, which keeps
    # the rule pack under 1 GB at 1e7 kernels), and get the linear ASOF plan (see build()).
    con = duckdb.connect(str(db), read_only=True, config={"enable_external_access": False,
                                                            "autoload_known_extensions": False,
                                                            "autoinstall_known_extensions": False,
                                                            "memory_limit": memory_limit(RULES_MEMORY_LIMIT),
                                                            "asof_loop_join_threshold": 0}
                          | thread_config(db.stat().st_size < SMALL_EXPORT_BYTES))
    con.execute(NO_PROGRESS_BAR)
    return con


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the opened trace holds a table of that name (caches of older builds may lack some)."""
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                            [name]).fetchone()[0])


def with_memory_retry(con: duckdb.DuckDBPyConnection, run):
    """run(), redone once with RETRY_MEMORY_LIMIT on `con` if it ran out of memory under the cap.
    The raised cap stays for the connection's later queries: they work on the same tables."""
    try:
        return run()
    except duckdb.OutOfMemoryException:
        limit = "SELECT current_setting('memory_limit')"
        before = con.execute(limit).fetchone()[0]
        _set_memory_limit(con, RETRY_MEMORY_LIMIT)
        if con.execute(limit).fetchone()[0] == before:
            raise  # already at the retry cap (an earlier query raised it): it would fail again
        return run()


def is_corrupt(e: BaseException) -> bool:
    """DuckDB found a block of the database that does not match its checksum."""
    return isinstance(e, duckdb.IOException) and ("Corrupt database file" in str(e) or "checksum" in str(e))


def _tables_of(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, bool], str, list[str]]:
    captured = dict(con.execute(sql_library.query("trace_captured")).fetchall())
    used = con.execute(sql_library.query("trace_reader")).fetchone()[0]
    sources = [r[0] for r in con.execute(sql_library.query("trace_source_tables")).fetchall()]
    return captured, used, sources


def _open_cached(db: Path) -> tuple[duckdb.DuckDBPyConnection, tuple] | None:
    """The verified cache database and its bookkeeping tables, or None (absent or discarded)."""
    if not cache_files.verified(db):
        return None
    try:
        con = _open_readonly(db)
    except duckdb.Error as e:  # from another DuckDB, or damaged in a way the sum cannot see
        cache_files.warn(db, f"cache file cannot be opened ({str(e).splitlines()[0]})")
        cache_files.discard(db, cache_files.sum_file(db))
        return None
    try:
        return con, _tables_of(con)
    except duckdb.Error as e:
        con.close()
        cache_files.warn(db, f"cache file unreadable ({str(e).splitlines()[0]})")
        cache_files.discard(db, cache_files.sum_file(db))
        return None


def _open_or_build(db: Path, export: Path, reader: str, found: identity.Content,
                   settings: SettingValues | None) -> tuple[duckdb.DuckDBPyConnection, tuple, bool]:
    """The cache database `db` of `export`, ingested first if absent: (connection, tables, cached)."""
    if (opened := _open_cached(db)) is not None:
        return *opened, True
    # A second process on the same export waits for the first one's ingest (minutes and a GB
    # on a big export) instead of doing it again, then opens its result.
    with cache_files.exclusive(cache_files.lock_file(db)):
        if (opened := _open_cached(db)) is not None:
            return *opened, True
        cache_files.sweep(db.parent, held=db.stem)
        tmp = cache_files.build_name(db)
        try:
            build(export, tmp, reader, settings=settings)
            if not identity.still_holds(export, found):  # the key would name other bytes
                raise InputError(export, "changed while it was being read (is it still being written?); "
                                         "run again once it is complete")
            cache_files.seal(tmp, db)
        finally:
            cache_files.discard(tmp, Path(f"{tmp}.wal"), Path(f"{tmp}.spill"))
        con = _open_readonly(db)
        return con, _tables_of(con), False


def with_trace(path: str | os.PathLike, run: Callable[[Trace], T], **options) -> T:
    """run(trace) on the opened export. A cache file found corrupt only while it is read (DuckDB
    checks every block it reads against its checksum) is discarded, said on stderr, rebuilt, and
    run() is called again once."""
    trace = open_trace(path, **options)
    try:
        return run(trace)
    except duckdb.Error as e:
        if trace.db is None or not is_corrupt(e):
            raise
        corrupt, problem = trace.db, str(e).splitlines()[0]
    finally:
        trace.close()
    cache_files.warn(corrupt, f"cache file corrupt ({problem})")
    cache_files.discard(corrupt, cache_files.sum_file(corrupt))
    trace = open_trace(path, **options)
    try:
        return run(trace)
    finally:
        trace.close()


def open_trace(path: str | os.PathLike, *, use_cache: bool = True, cache_dir: Path | None = None,
               reader: str = "auto", tables: set[str] | frozenset[str] | None = None,
               settings: SettingValues | None = None) -> Trace:
    """The export opened over its normalized tables. `tables`: the library's tables and macros
    the caller reads (None: all). Without the cache the ingest runs only the SQL modules that
    make them; a cache file holds every module's tables, since it serves every later run.
    `settings`: the run's setting values (checked, engine/params.py); those the ingest reads are
    in the cache key."""
    p = Path(path)
    modules = None if use_cache else modules_for(tables)
    if nsysrep.is_report(p):  # export to SQLite with the user's nsys (cached), then read that
        with nsysrep.exported(p, (cache_dir or default_cache_dir()) if use_cache else None) as sqlite:
            trace = open_trace(sqlite, use_cache=use_cache, cache_dir=cache_dir, reader=reader, tables=tables,
                               settings=settings)
        trace.report = p
        return trace
    check_input(p)
    memory_limit()  # a malformed $NSYS_DIAGNOSE_MEMORY_LIMIT is a usage error before any work
    if use_cache:
        cache_dir = cache_dir or default_cache_dir()
        use_cache = cache_files.trusted_folder(cache_dir)
    if use_cache:
        try:  # a folder we may use but cannot write to (read-only, full of inodes)
            tempfile.NamedTemporaryFile(dir=cache_dir, delete=True).close()
        except OSError:
            use_cache = False
    if use_cache:
        key, found = content(p, cache_dir, settings)
        db = cache_dir / f"{key}.duckdb"
        try:
            con, (captured, used, sources), from_cache = _open_or_build(db, p, reader, found, settings)
            return Trace(p, con, captured, used, from_cache, sources, db=db if from_cache else None)
        except (NoSpaceError, OSError) as e:
            if not is_no_space(e) and not isinstance(e, NoSpaceError):
                raise
            print(f"nsys-diagnose: {printable(cache_dir)}: no space left in the cache folder; "
                  "analyzing without the cache", file=sys.stderr, flush=True)
    # No cache: a private folder, removed on close (or by a later run's sweep, if this one is killed)
    folder = cache_files.TempFolder()
    try:
        build(p, folder.path / "trace.duckdb", reader, modules, settings)
        con = _open_readonly(folder.path / "trace.duckdb")
        captured, used, sources = _tables_of(con)
    except BaseException:
        folder.remove()
        raise
    return Trace(p, con, captured, used, False, sources, folder)
