"""A seeded mutator of SQLite exports, for the fuzz test: every case is reproducible from its seed.

Two kinds of damage, as a careless tool, a torn copy or a hostile author would do it:
- bytes: bit flips, a truncation, a zeroed or garbage page, appended junk, a header field
  changed (page size, page count, journal mode bytes);
- rows, through SQLite itself (so the file stays a valid database): values of another type
  (TEXT, BLOB, REAL, NULL, huge or negative integers) in the columns the ingest reads,
  duplicated ids, rows copied with a key changed, a table renamed to lower case or dropped, a
  column dropped.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

from .synth import quote_ident

ODD_VALUES = [None, "", "text", "12abc", b"\x00\xff", 1.5, -1, 0, 2**63 - 1, -(2**63), float("inf"),
              "\x1b]0;title\x07", "9" * 40, 1e300]
KEY_COLUMNS = {
    "StringIds": ["id", "value"],
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "globalPid", "correlationId", "streamId",
                                   "demangledName", "shortName", "gridX", "blockX"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId", "eventClass"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "deviceId", "bytes", "copyKind", "srcKind"],
    "NVTX_EVENTS": ["start", "end", "eventType", "text", "textId", "globalTid", "domainId"],
    "TARGET_INFO_GPU": ["id", "name", "smCount", "totalMemory"],
    "TARGET_INFO_CUDA_DEVICE": ["gpuId", "cudaId"],
    "PROCESSES": ["pid", "globalPid", "name"],
    "ThreadNames": ["nameId", "globalTid", "priority"],
    "META_DATA_EXPORT": ["name", "value"],
    "META_DATA_CAPTURE": ["name", "value"],
    "OSRT_API": ["start", "end", "nameId"],
    "CUDA_GPU_MEMORY_USAGE_EVENTS": ["start", "bytes", "memKind", "deviceId"],
}
BYTE_KINDS = ["flip", "flips", "truncate", "zero-page", "garbage-page", "append", "header"]
ROW_KINDS = ["value", "values", "duplicate-ids", "copy-rows", "lower-case-table", "drop-table", "drop-column"]


def _tables(con: sqlite3.Connection) -> dict[str, list[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: [r[1] for r in con.execute(f"PRAGMA table_info({quote_ident(t)})")] for t in names}


def _target(rng: random.Random, tables: dict[str, list[str]]) -> tuple[str, str] | None:
    known = [(t, c) for t, cols in KEY_COLUMNS.items() if t in tables for c in cols if c in tables[t]]
    return rng.choice(known) if known else None


def mutate_rows(path: Path, rng: random.Random) -> str:
    """One row-level change, made through SQLite; returns what was done."""
    con = sqlite3.connect(path)
    con.text_factory = lambda b: b.decode("utf-8", "replace")  # an earlier bit flip may have hit text
    kind = rng.choice(ROW_KINDS)
    try:
        tables = _tables(con)
        target = _target(rng, tables)
        if target is None:
            return "nothing to change"
        table, column = target
        t, c = quote_ident(table), quote_ident(column)
        if kind in ("value", "values"):
            value = rng.choice(ODD_VALUES)
            where = "" if kind == "values" else f" WHERE rowid IN (SELECT rowid FROM {t} ORDER BY random() LIMIT 1)"
            con.execute(f"UPDATE OR IGNORE {t} SET {c} = ?{where}", [value])
            done = f"{kind} {table}.{column} = {value!r}"
        elif kind == "duplicate-ids":
            con.execute(f"INSERT INTO {t} SELECT * FROM {t} ORDER BY random() LIMIT 3")
            done = f"duplicate rows of {table}"
        elif kind == "copy-rows":
            cols = ", ".join(quote_ident(x) for x in tables[table])
            picked = ", ".join(f"? AS {quote_ident(x)}" if x == column else quote_ident(x) for x in tables[table])
            value = rng.choice(ODD_VALUES)
            con.execute(f"INSERT INTO {t} ({cols}) SELECT {picked} FROM {t} ORDER BY random() LIMIT 5", [value])
            done = f"copied rows of {table} with {column} = {value!r}"
        elif kind == "lower-case-table":
            lower = table.lower()
            con.execute(f"ALTER TABLE {t} RENAME TO {quote_ident(lower + '_tmp')}")
            con.execute(f"ALTER TABLE {quote_ident(lower + '_tmp')} RENAME TO {quote_ident(lower)}")
            done = f"renamed {table} to {lower}"
        elif kind == "drop-table":
            con.execute(f"DROP TABLE {t}")
            done = f"dropped {table}"
        else:
            con.execute(f"ALTER TABLE {t} DROP COLUMN {c}")
            done = f"dropped {table}.{column}"
        con.commit()
        return done
    except sqlite3.Error as e:  # e.g. a column in an index or a primary key: no change then
        return f"{kind}: refused by SQLite ({e})"
    finally:
        con.close()


def mutate_bytes(path: Path, rng: random.Random) -> str:
    data = bytearray(path.read_bytes())
    kind = rng.choice(BYTE_KINDS)
    page = int.from_bytes(data[16:18], "big") or 4096
    page = 65536 if page == 1 else page
    if kind == "flip":
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        done = f"bit flip at byte {at}"
    elif kind == "flips":
        spots = [rng.randrange(len(data)) for _ in range(rng.randint(2, 64))]
        for at in spots:
            data[at] ^= 1 << rng.randrange(8)
        done = f"{len(spots)} bit flips"
    elif kind == "truncate":
        keep = rng.randrange(len(data))
        del data[keep:]
        done = f"truncated to {keep} bytes"
    elif kind in ("zero-page", "garbage-page"):
        n = rng.randrange(max(1, len(data) // page))
        fill = bytes(page) if kind == "zero-page" else rng.randbytes(page)
        data[n * page:(n + 1) * page] = fill[: len(data[n * page:(n + 1) * page])]
        done = f"{kind} {n + 1}"
    elif kind == "append":
        data += rng.randbytes(rng.randint(1, 3 * page))
        done = "junk appended"
    else:
        field = rng.choice([(16, 2), (18, 1), (19, 1), (24, 4), (28, 4), (52, 4), (56, 4), (92, 4), (96, 4)])
        at, width = field
        data[at:at + width] = rng.randbytes(width)
        done = f"header bytes {at}..{at + width - 1} replaced"
    path.write_bytes(bytes(data))
    return done


def mutant(source: Path, out: Path, seed: int) -> str:
    """`source` copied to `out` and damaged once or twice, reproducibly from `seed`."""
    rng = random.Random(seed)
    shutil.copyfile(source, out)
    steps = [mutate_rows(out, rng) if rng.random() < 0.6 else mutate_bytes(out, rng)
             for _ in range(rng.choice([1, 1, 2]))]
    return "; ".join(steps)
