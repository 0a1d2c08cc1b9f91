"""Read an nsys SQLite export, read-only, into DuckDB.

Two readers, one contract: given a source table and the columns wanted, give DuckDB a
relation `src_<alias>` with exactly those columns (a typed NULL where the export lacks one).
- `scanner`: DuckDB's own sqlite extension, loaded from the PyPI wheel's files (never from the
  network; signature check on). Parallel and column-projected: the fast path. A table that holds
  a text value longer than the cut goes through sqlite_query instead, cut inside SQLite.
- `sqlite3`: Python's sqlite3 streaming Arrow batches, for platforms without the wheel.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sqlite3
from pathlib import Path
from typing import Iterator

import duckdb
from nsys_diagnose.errors import InputError
from nsys_diagnose.files import open_regular
from nsys_diagnose.ingest import schema
from nsys_diagnose.output import write_atomic

BATCH_ROWS = 65536
_SQLITE_CAST = {"BIGINT": "INTEGER", "VARCHAR": "TEXT", "DOUBLE": "REAL"}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def scanner_extension_path() -> str | None:
    """The sqlite_scanner binary shipped by the duckdb-extension-sqlite-scanner wheel, if installed."""
    try:
        import duckdb_extension_sqlite_scanner as ext
    except ImportError:
        return None
    found = glob.glob(os.path.join(os.path.dirname(ext.__file__), "extensions", "*", "*.duckdb_extension"))
    return found[0] if found else None


def decode_text(raw: bytes) -> str:
    """SQLite TEXT as str. Programs can put any bytes in NVTX or thread names; text that is not
    UTF-8 is kept, escaped as DuckDB renders a BLOB (`\\xFF`), so both readers agree."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if 32 <= b <= 126 and b not in b"\\'\"" else f"\\x{b:02X}" for b in raw)


# The scanner's twin of decode_text: valid UTF-8 as is, anything else as DuckDB's BLOB text.
SCANNER_TEXT = "coalesce(try(decode(encode({c}))), CAST(encode({c}) AS VARCHAR))"
# Text longer than MAX_TEXT_CHARS is cut where it is read, before the copies above and any
# statement carry it (twenty 10 MB NVTX messages: 1.1 GB), and marked with its size in the
# export as limits.marker writes it; normalize.sql's cut_text leaves such a value as it is.
MAX_TEXT_CHARS = 131_000
SCANNER_CUT = ("CASE WHEN length({c}) <= " + str(MAX_TEXT_CHARS) + " THEN " + SCANNER_TEXT + " ELSE "
               + SCANNER_TEXT.replace("{c}", "left({c}, " + str(MAX_TEXT_CHARS) + ")")
               + " || ' ... [truncated: ' || format('{{:,}}', strlen({c})) || ' bytes in all]' END")
# (SQLite's printf has no thousands separator before 3.38: the sqlite3 reader's marker gives
# the plain number, which MARKED writes as limits.marker does)
SQLITE_CUT = ("CASE WHEN length({c}) <= {n} THEN CAST({c} AS TEXT) ELSE substr(CAST({c} AS TEXT), 1, {n}) "
              "|| ' ... [truncated: ' || length(CAST({c} AS BLOB)) || ' bytes in all]' END")
MARKED = ("CASE WHEN length({c}) > {n} THEN left({c}, {n}) || ' ... [truncated: ' || "
          "format('{{:,}}', TRY_CAST(regexp_extract({c}, '(\\d+) bytes in all\\]$', 1) AS BIGINT)) || ' bytes in all]' "
          "ELSE {c} END AS {c}")


def open_sqlite(path: Path) -> sqlite3.Connection:
    """Open the export read-only and immutable: SQLite takes no lock and writes nothing."""
    uri = "file:" + quote_uri(str(path.resolve())) + "?mode=ro&immutable=1"
    con = sqlite3.connect(uri, uri=True, check_same_thread=False)
    con.text_factory = decode_text
    return con


def quote_uri(p: str) -> str:
    from urllib.parse import quote as q

    return q(p, safe="/")


def discover(path: Path) -> dict[str, set[str]]:
    """Tables of the export and their columns; raises InputError if it is not readable SQLite.
    SQLite's names are case-blind (a table stored as cupti_activity_kind_kernel answers to
    CUPTI_ACTIVITY_KIND_KERNEL), so names the schema knows are given in its spelling."""
    try:
        con = open_sqlite(path)
        try:
            # (a damaged schema can hold a name that is a blob or a number: such a table is not ours)
            names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                     if isinstance(r[0], str)]
            found = {t: {r[1] for r in con.execute(f"PRAGMA table_info({quote(t)})") if isinstance(r[1], str)}
                     for t in names}
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise InputError(path, f"not a readable SQLite database ({e})") from None
    except UnicodeDecodeError:  # sqlite3 decodes SQLite's error text strictly: a damaged schema's
        raise InputError(path, "not a readable SQLite database (its schema holds bytes that are not UTF-8)") from None
    return {_spelled(t, TABLES): {_spelled(c, COLUMNS.get(_spelled(t, TABLES), {})) for c in cols}
            for t, cols in found.items()}


def _spelled(name: str, known: dict[str, str]) -> str:
    return known.get(name.lower(), name)


TABLES = {t.lower(): t for t in (*schema.SOURCES, *schema.NSYS_MARKERS)}
COLUMNS = {t: {c.lower(): c for c in cols} for t, cols in schema.SOURCES.items()}


def _select_list(columns: dict[str, str], present: set[str], cast) -> str:
    parts = []
    for col, typ in columns.items():
        if col in present:
            parts.append(f"{cast(quote(col), typ)} AS {quote(col)}")
        else:
            parts.append(f"CAST(NULL AS {typ}) AS {quote(col)}")
    return ", ".join(parts)


# Extension files whose signature DuckDB has checked, by identity. The check hashes the 35 MB
# binary on every LOAD (~75 ms, a tenth of a small export's first run), so it is done once per
# installed binary: remembered in this process (a batch or a test suite ingests hundreds) and in
# a record beside the cache (later processes). A replaced binary has another identity and is
# checked again; whoever could forge the record could as well edit the installed duckdb package.
_verified: set[tuple] = set()
VERIFIED_RECORD = "sqlite-scanner.verified"


def _identity(path: str) -> tuple:
    st = os.stat(path)
    return path, st.st_ino, st.st_size, st.st_mtime_ns


def _recorded(folder: Path) -> str | None:
    try:
        return (folder / VERIFIED_RECORD).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def ingest_config(folder: Path | None = None) -> dict:
    """Config for a new ingest connection: skip the signature check of an already-verified,
    unchanged scanner binary (in this process, or by the record in `folder`). Only the ingest's
    own SQL ever runs on such a connection."""
    ext = scanner_extension_path()
    try:
        ident = _identity(ext) if ext else None
    except OSError:
        return {}
    if ident is not None and (ident in _verified or (folder is not None and _recorded(folder) == repr(ident))):
        return {"allow_unsigned_extensions": True}
    return {}


def _remember_verified(extension: str, folder: Path | None) -> None:
    ident = _identity(extension)
    _verified.add(ident)
    if folder is not None and _recorded(folder) != repr(ident):
        with contextlib.suppress(OSError):  # a read-only folder: the next process checks again
            write_atomic(folder / VERIFIED_RECORD, repr(ident))


EXPORT_DB = "nsys_export"  # the scanner's name for the export, attached for sqlite_query


class ScannerReader:
    name = "scanner"
    kind = "VIEW"  # what its src_* relations are

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, extension: str, record: Path | None = None,
                 temp: bool = True):
        con.execute(f"LOAD {sql_string(extension)}")
        self.temp = "TEMP " if temp else ""  # see make_reader
        _remember_verified(extension, record)
        self.con, self.path = con, path
        self.attached = False  # the export, attached read-only on the first table with long text
        self.src: sqlite3.Connection | None = None  # the export in Python's sqlite3, for _long_text

    def relation(self, alias: str, table: str | None, columns: dict[str, str], present: set[str],
                 where: str | None = None) -> None:
        # TRY_CAST: a column declared with another type (TEXT holding numbers) reads as the
        # sqlite3 reader's CAST reads it, instead of failing to bind; same-type casts are free.
        cols = _select_list(columns, present,
                            lambda c, t: SCANNER_CUT.format(c=c) if t == "VARCHAR" else f"TRY_CAST({c} AS {t})")
        if table is None:
            self.con.execute(f"CREATE {self.temp}VIEW src_{alias} AS SELECT {cols} WHERE false")
            return
        filt = f" WHERE {where}" if where else ""
        text = [c for c in columns if c in present and columns[c] == "VARCHAR"]
        if text and self._long_text(table, text):
            self._text_relation(alias, table, columns, present, filt)
            return
        self.con.execute(
            f"CREATE {self.temp}VIEW src_{alias} AS SELECT {cols} FROM sqlite_scan({sql_string(str(self.path))}, "
            f"{sql_string(table)}){filt}")

    def _long_text(self, table: str, text: list[str]) -> bool:
        """Whether a value of these columns is longer than MAX_TEXT_CHARS (or SQLite cannot say):
        SQLite reads one value at a time and stops at the first. 0.2 s for 1e6 NVTX rows, where
        reading them all through sqlite_query costs 3 to 4 s more than sqlite_scan."""
        long = " OR ".join(f"length({quote(c)}) > {MAX_TEXT_CHARS}" for c in text)
        try:
            if self.src is None:
                self.src = open_sqlite(self.path)
            return self.src.execute(f"SELECT 1 FROM {quote(table)} WHERE {long} LIMIT 1").fetchone() is not None
        except (sqlite3.Error, UnicodeDecodeError):
            return True  # a damaged table: the bounded path, whose error DuckDB reports as sqlite_scan's

    def close(self) -> None:
        if self.src is not None:
            self.src.close()

    def _text_relation(self, alias: str, table: str, columns: dict[str, str], present: set[str], filt: str) -> None:
        """A table with a long text value, read through SQLite's own SQL so that the value is cut
        inside SQLite, one value at a time: sqlite_scan hands each value over whole, and an
        export whose name cells share one self-referencing overflow chain (60 MB that reads as
        1.9 GB of text) then took 3.7 GB (issue 36). sqlite_query gives every value as text
        and reads on one thread, so only such a table takes this path."""
        if not self.attached:
            self.con.execute(f"ATTACH {sql_string(str(self.path))} AS {EXPORT_DB} (TYPE sqlite, READ_ONLY)")
            self.attached = True
        read = [c for c in columns if c in present]
        inner = ", ".join(f"{SQLITE_CUT.format(c=quote(c), n=MAX_TEXT_CHARS) if columns[c] == 'VARCHAR' else quote(c)}"
                          f" AS {quote(c)}" for c in read)
        # the scanner's text as before (UTF-8 or BLOB text), then the marker's size as limits.marker writes it
        middle = ", ".join(f"{SCANNER_TEXT.format(c=quote(c)) if columns[c] == 'VARCHAR' else f'TRY_CAST({quote(c)} AS {columns[c]})'}"
                           f" AS {quote(c)}" for c in read)
        outer = ", ".join(MARKED.format(c=quote(c), n=MAX_TEXT_CHARS) if c in present and t == "VARCHAR"
                          else quote(c) if c in present else f"CAST(NULL AS {t}) AS {quote(c)}"
                          for c, t in columns.items())
        query = sql_string(f"SELECT {inner} FROM {quote(table)}")
        self.con.execute(f"CREATE {self.temp}VIEW src_{alias} AS SELECT {outer} FROM (SELECT {middle} FROM "
                         f"sqlite_query({sql_string(EXPORT_DB)}, {query}){filt}) AS t")


class Sqlite3Reader:
    name = "sqlite3"
    kind = "TABLE"

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, temp: bool = True):
        self.con, self.path = con, path
        self.temp = "TEMP " if temp else ""  # see make_reader
        self.src = open_sqlite(path)
        self.failure: sqlite3.Error | None = None  # what SQLite said, under DuckDB's wrapping

    def relation(self, alias: str, table: str | None, columns: dict[str, str], present: set[str],
                 where: str | None = None) -> None:
        import pyarrow as pa  # here, not at the top: it costs every run ~0.2 s of start-up

        types = {"BIGINT": pa.int64(), "VARCHAR": pa.string(), "DOUBLE": pa.float64()}
        schema = pa.schema([(c, types[t]) for c, t in columns.items()])
        batches = self._batches(table, columns, present, where, schema) if table else iter(())
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        # A stream can be read once; later statements need the rows again, so materialize.
        self.con.register(f"_arrow_{alias}", reader)
        marked = [MARKED.format(c=quote(c), n=MAX_TEXT_CHARS) for c, t in columns.items() if t == "VARCHAR"]
        replace = f" REPLACE ({', '.join(marked)})" if marked else ""
        try:
            self.con.execute(f"CREATE {self.temp}TABLE src_{alias} AS SELECT *{replace} FROM _arrow_{alias}")
        except duckdb.Error:
            if self.failure is not None:  # e.g. a corrupt page: say so, not DuckDB's Arrow wrapper
                raise InputError(self.path, f"could not be read: table {table}: {self.failure}") from None
            raise
        self.con.unregister(f"_arrow_{alias}")

    def _batches(self, table, columns, present, where, schema) -> Iterator:
        import pyarrow as pa

        cols = _select_list(columns, present, lambda c, t: SQLITE_CUT.format(c=c, n=MAX_TEXT_CHARS) if t == "VARCHAR"
                            else f"CAST({c} AS {_SQLITE_CAST[t]})")
        filt = f" WHERE {where}" if where else ""
        names = list(columns)
        try:
            cur = self.src.execute(f"SELECT {cols} FROM {quote(table)}{filt}")
            while rows := cur.fetchmany(BATCH_ROWS):
                data = list(zip(*rows))
                yield pa.RecordBatch.from_arrays([pa.array(data[i], type=schema.field(i).type)
                                                  for i in range(len(names))], schema=schema)
        except sqlite3.Error as e:
            self.failure = e
            raise

    def close(self) -> None:
        self.src.close()


def sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def wal_mode(path: Path) -> bool:
    """Header bytes 18-19 are 2 in WAL mode. SQLite then keeps -wal and -shm files beside the
    database, and DuckDB's extension (no `immutable` open) would create them next to the input."""
    with open_regular(path) as f:
        head = f.read(20)
    return len(head) == 20 and 2 in (head[18], head[19])


def make_reader(kind: str, con: duckdb.DuckDBPyConnection, path: Path, record: Path | None = None,
                temp: bool = True):
    """`auto` takes the scanner when its wheel is installed and loads, else sqlite3; a WAL-mode
    database always goes to sqlite3, which opens it immutable and writes nothing. `record` is
    the folder where the scanner's verified signature is remembered (ingest_config). The src_*
    relations are temporary, `con`'s own, unless `temp` is false: then they are in the database,
    for every cursor of it, and whoever asked drops them."""
    if kind in ("auto", "scanner") and wal_mode(path):
        if kind == "scanner":
            raise InputError(path, "is in WAL mode: reader 'scanner' would create -wal and -shm files beside it; "
                                   "use --reader sqlite3 (auto does)")
        kind = "sqlite3"
    if kind in ("auto", "scanner"):
        ext = scanner_extension_path()
        if ext:
            try:
                return ScannerReader(con, path, ext, record, temp)
            except duckdb.Error:
                if kind == "scanner":
                    raise
        elif kind == "scanner":
            raise InputError(path, "reader 'scanner' needs the duckdb-extension-sqlite-scanner wheel")
    return Sqlite3Reader(con, path, temp)
