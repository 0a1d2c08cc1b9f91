#!/usr/bin/env python3
"""How DuckDB's operators grow from 1e6 to 1e7 rows under the ingest's memory limit (issue 31).

    python bench/window_growth.py [--memory-limit 500MB] [--rows 1e6 1e7]

One synthetic (device, process) of GPU-operation-like rows (start, end, launching thread), one
partition as in a real single-GPU trace, and the operators the ingest's per-interval statements
are built from, each timed alone in wall and CPU seconds (user + sys, all DuckDB threads): the
exclusive running max of gpu_openers, a DOUBLE running sum (gpu_busy_cum, budget_segments), a
lag (the idle runs), and a plain sort of the same rows. Written to a scratch folder, deleted after.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

QUERIES = {
    "running max (gpu_openers)": """
        SELECT * FROM (SELECT device_id, pid, start_ns, max(end_ns) OVER w AS prev_end, row_number() OVER w AS rn FROM a
        WINDOW w AS (PARTITION BY device_id, pid ORDER BY start_ns, launch_tid NULLS LAST, end_ns
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) WHERE prev_end IS NULL OR start_ns > prev_end""",
    "running DOUBLE sum": """
        SELECT device_id, pid, start_ns, sum(end_ns::DOUBLE) OVER (PARTITION BY device_id, pid ORDER BY start_ns
                                                                   ROWS UNBOUNDED PRECEDING) AS s FROM a""",
    "lag": "SELECT device_id, pid, start_ns, lag(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns) AS s FROM a",
    "sort": "SELECT * FROM a ORDER BY device_id, pid, start_ns",
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory-limit", default="500MB")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", nargs="+", type=float, default=[1e6, 1e7])
    args = ap.parse_args()
    import duckdb
    seen: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="window-growth-") as tmp:
        for n in map(int, args.rows):
            db = Path(tmp) / f"w{n}.duckdb"
            con = duckdb.connect(str(db), config={"memory_limit": args.memory_limit, "threads": args.threads,
                                                  "preserve_insertion_order": False, "temp_directory": f"{tmp}/spill"})
            con.execute(f"""CREATE TABLE a AS SELECT 0::BIGINT AS device_id, 1::BIGINT AS pid,
                            i * 1000 + (hash(i) % 500)::BIGINT AS start_ns, i * 1000 + 300 + (hash(i * 7) % 900)::BIGINT AS end_ns,
                            (hash(i) % 3)::BIGINT AS launch_tid FROM range({n}) t(i)""")
            for name, q in QUERIES.items():
                t, c = time.perf_counter(), _cpu()
                con.execute(f"CREATE OR REPLACE TABLE r AS {q}")
                wall, cpu = time.perf_counter() - t, _cpu() - c
                seen.setdefault(name, []).append(cpu)
                print(f"{n:>10,} rows  {name:<28} {wall:7.2f} s wall {cpu:7.2f} CPU s", flush=True)
            con.close()
            db.unlink()
    if len(args.rows) == 2:
        for name, (a, b) in seen.items():
            print(f"{name}: {b / a:.1f}x CPU from {args.rows[0]:.0e} to {args.rows[1]:.0e} rows")


if __name__ == "__main__":
    main()
