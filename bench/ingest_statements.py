#!/usr/bin/env python3
"""Every ingest statement of a cold ingest, timed, and how each grows from one size to another (issue 31).

    python bench/ingest_statements.py EXPORT [--json out.json]        # the floor, then a cold ingest
    python bench/ingest_statements.py --growth SMALL.json LARGE.json  # each statement's growth

The first form times, in one process: the floor (one DuckDB scan of the source tables and columns
the ingest reads, copied into a fresh .duckdb file, as bench/benchmark.py's floor) and a cold
ingest (`database.build`, no rules), each ingest statement labelled by its SQL file and what it
makes ("idle_gaps: CREATE TABLE gap_states", its runs summed), in wall and CPU seconds (user + sys
of the whole process, all DuckDB threads: the steadier figure on a shared machine). The second form reads two such
files (say 1e6 and 1e7 kernels) and prints the costliest statements at the larger size with their
growth; issue 31 asks that none grows faster than 12x from 1e6 to 1e7. bench/benchmark.py uses
`floor_copy` and `time_statements` from here for its floor and its stage runs.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import tempfile
import time
from pathlib import Path

GROWTH_LIMIT = 12.0  # issue 31: from 1e6 to 1e7 kernels, no statement may grow faster
_VERB = re.compile(r"(?:\s*--[^\n]*\n)*\s*((?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+)?(?:TABLE|VIEW|MACRO|TYPE)"
                   r"|INSERT\s+INTO|DROP\s+TABLE|DELETE\s+FROM)\s+\w+)", re.I)


def floor_copy(path: Path, work: Path) -> None:
    """The floor: each source table the ingest reads, projected as its reader does, copied into
    a fresh .duckdb file in `work` (a cold run cannot cost less)."""
    import duckdb
    from nsys_diagnose.ingest import database as D
    from nsys_diagnose.ingest import schema
    from nsys_diagnose.ingest.reader import discover, ingest_config, make_reader
    tables = discover(path)
    con = duckdb.connect(str(work / "floor.duckdb"),
                         config=ingest_config() | D.thread_config() | {"memory_limit": D.memory_limit()})
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET temp_directory = '{work}/floor.spill'")
    reader = make_reader("auto", con, path)
    for table, columns in schema.SOURCES.items():
        if table in tables:
            alias = D.ALIASES[table]
            reader.relation(alias, table, columns, tables[table], schema.ROW_FILTERS.get(table))
            con.execute(f"CREATE TABLE copy_{alias} AS SELECT * FROM src_{alias}")
    con.execute("CHECKPOINT")
    con.close()


def time_statements(per_file: dict[str, float], per_statement: dict[str, list]) -> None:
    """From now on, the ingest's connections charge each of its statements' wall time to its SQL
    file (per_file) and to the statement (per_statement: label -> [runs, seconds, CPU seconds]).
    On a small export the statements run side by side (database._side_by_side): their times then
    overlap, and the CPU seconds are the whole process's while each ran."""
    import duckdb
    from nsys_diagnose.ingest import database as D
    from nsys_diagnose.ingest.sql_library import without_temp
    owner = {s: name for name, text in D._sql_files() for s in D._statements(text)}
    owner |= {without_temp(s)[0]: name for s, name in owner.items()}  # as side by side runs them

    def label(sql: str) -> str:
        m = _VERB.match(sql)
        return f"{owner[sql].removesuffix('.sql')}: " + (" ".join(m[1].split()) if m else "other")

    class Timed:  # a connection whose execute() charges ingest statements to their SQL file
        def __init__(self, con): self._con = con
        def __getattr__(self, name): return getattr(self._con, name)
        def cursor(self): return Timed(self._con.cursor())  # side by side, each statement runs on one

        def execute(self, sql, *args):
            s, c = time.perf_counter(), _cpu()
            try:
                return self._con.execute(sql, *args)
            finally:
                if sql in owner:
                    took = time.perf_counter() - s
                    per_file[owner[sql]] = per_file.get(owner[sql], 0) + took
                    runs = per_statement.setdefault(label(sql), [0, 0.0, 0.0])
                    runs[0] += 1
                    runs[1] += took
                    runs[2] += _cpu() - c

    connect = duckdb.connect
    D.duckdb.connect = lambda *a, **k: Timed(connect(*a, **k)) if not k.get("read_only") else connect(*a, **k)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(path: Path) -> dict:
    from nsys_diagnose.ingest import database as D
    out: dict = {"export": str(path), "bytes": path.stat().st_size}
    with tempfile.TemporaryDirectory(prefix="ingest-statements-") as tmp:
        work = Path(tmp)
        t, c = time.perf_counter(), _cpu()
        floor_copy(path, work)
        out.update(floor_s=time.perf_counter() - t, floor_cpu_s=_cpu() - c)
        per_file: dict[str, float] = {}
        per_statement: dict[str, list] = {}
        time_statements(per_file, per_statement)
        t, c = time.perf_counter(), _cpu()
        D.build(path, work / "cache.duckdb")
        out.update(ingest_s=time.perf_counter() - t, ingest_cpu_s=_cpu() - c,
                   peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   per_file=per_file, per_statement=per_statement)
    return out


def growth(small: dict, large: dict, top: int = 15) -> list[str]:
    """The costliest statements at the larger size and their growth, by CPU seconds where both
    files hold them (a loaded machine's wall time moves with the load), else by wall seconds."""
    col = 2 if all(len(v) > 2 for d in (small, large) for v in d["per_statement"].values()) else 1
    unit = "CPU s" if col == 2 else "s"
    a = {k: v[col] for k, v in small["per_statement"].items()}
    b = {k: v[col] for k, v in large["per_statement"].items()}
    total_a, total_b = sum(a.values()), sum(b.values())
    lines = [f"| statement | {Path(small['export']).name} {unit} | {Path(large['export']).name} {unit} | growth |",
             "|---|---|---|---|"]
    for name, sec in sorted(b.items(), key=lambda kv: -kv[1])[:top]:
        base = a.get(name, 0.0)
        lines.append(f"| {name} | {base:.2f} | {sec:.2f} | {sec / base:.1f}x |" if base else f"| {name} | - | {sec:.2f} | - |")
    lines.append(f"| all {len(b)} statements | {total_a:.1f} | {total_b:.1f} | {total_b / total_a:.1f}x |")
    over = sorted((name, a[name], sec) for name, sec in b.items()
                  if sec >= 0.3 and a.get(name, 0.0) > 0 and sec / a[name] > GROWTH_LIMIT)
    lines.append(f"\nover {GROWTH_LIMIT:.0f}x (of those taking 0.3 {unit} or more at the larger size): "
                 + (", ".join(f"{n} {x:.2f} -> {y:.2f} {unit} ({y / x:.0f}x)" for n, x, y in over) or "none"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", type=Path, nargs="?")
    ap.add_argument("--json", type=Path, help="write the figures to this file (else to stdout)")
    ap.add_argument("--growth", nargs=2, type=Path, metavar=("SMALL", "LARGE"), help="two --json files to compare")
    args = ap.parse_args()
    if args.growth:
        print("\n".join(growth(*(json.loads(p.read_text()) for p in args.growth))))
        return
    if args.export is None or not args.export.is_file():
        raise SystemExit(f"{args.export}: no such export")
    text = json.dumps(measure(args.export), indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
