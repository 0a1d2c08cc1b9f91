#!/usr/bin/env python3
"""Copy an nsys SQLite export with the capture host's environment and working paths blanked,
so it can go into fixtures/ (../shared/docs/capture.md). The input is never modified.

    python bench/capture/scrub_export.py /tmp/ddp_overlap.sqlite fixtures/exports/ddp_overlap.sqlite

Blanked (value set to ''): META_DATA_CAPTURE rows naming environment variables, working
directories, user names and command arguments; TARGET_INFO_SYSTEM_ENV rows other than the
hardware and driver facts the analyzer reads; META_DATA_EXPORT host, user and paths; StringIds
values holding NUL-separated blocks (environment dumps). Then VACUUM, so the old values do not
linger in free pages. Timing and GPU rows are untouched. Standard library only.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

KEEP_SYSTEM_ENV = ("NvDriverVersion", "CudaDriverVersion", "CpuCores", "OsDescription", "CpuArchitecture",
                   "HardwarePlatform", "SoftwarePlatform")
CAPTURE_PATTERNS = ("%ENVIRONMENT%", "%WORKING_DIR%", "%USER_NAME%", "%ARGUMENT%", "%COMMAND%")
EXPORT_PATTERNS = ("EXPORT_HOST", "EXPORT_USER", "%PATH%", "%FILE%", "DERIVED_FROM")


def tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def scrub(src: Path, dst: Path) -> dict[str, int]:
    if dst.resolve() == src.resolve():
        raise SystemExit("scrub_export: the output must be a new file, not the input")
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    counts: dict[str, int] = {}
    try:
        have = tables(con)

        def blank(table: str, where: str, params: tuple = ()) -> None:
            if table in have:
                cur = con.execute(f"UPDATE {table} SET value = '' WHERE ({where}) AND value <> ''", params)
                counts[table] = counts.get(table, 0) + cur.rowcount

        blank("META_DATA_CAPTURE", " OR ".join("name LIKE ?" for _ in CAPTURE_PATTERNS), CAPTURE_PATTERNS)
        blank("TARGET_INFO_SYSTEM_ENV", "name NOT IN (" + ",".join("?" * len(KEEP_SYSTEM_ENV)) + ")", KEEP_SYSTEM_ENV)
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            blank(table, " OR ".join("name LIKE ?" for _ in EXPORT_PATTERNS), EXPORT_PATTERNS)
        blank("StringIds", "instr(value, char(0)) > 0")
        con.commit()
        con.execute("VACUUM")
    finally:
        con.close()
    return counts


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    if not src.is_file():
        print(f"scrub_export: {src}: no such file", file=sys.stderr)
        return 2
    counts = scrub(src, dst)
    print(f"scrub_export: {dst} ({dst.stat().st_size:,} bytes); blanked " +
          ", ".join(f"{n} in {t}" for t, n in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
