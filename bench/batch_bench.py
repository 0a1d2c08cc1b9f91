#!/usr/bin/env python3
"""Batch benchmark (issue #5): a folder of N reports, serial versus parallel, figures printed.

    python bench/batch_bench.py [--n 100] [--jobs 1,2,4] [--dask] [--dir /tmp/nsys-diagnose-batch-bench]

The folder holds N symbolic links named r000.sqlite ... cycling over the real exports (the H200
set in ../shared/exports/h200-nsys2025.3 when present, and fixtures/exports). Each run is the
real command, `python -m nsys_diagnose DIR -o OUT -j J --no-cache`, so every report is ingested and
analyzed from scratch (links to the same file would otherwise share the ingest cache). Then
the incremental case: the same folder twice with the caches on (cold, then warm), and with
--dask the same batch on a local Dask cluster of J worker processes. Each parallel result is
checked against the serial one (reports.parquet without timings).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the Dask scheduler and workers of --dask unpickle analyzer's jobs
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
SOURCES = [ROOT.parent / "shared" / "exports" / "h200-nsys2025.3", ROOT / "fixtures" / "exports"]


def distinct_exports() -> list[Path]:
    """The exports of SOURCES, one per content (fixtures/exports holds copies of H200 files)."""
    sys.path.insert(0, str(ROOT))
    from tests.fixture_exports import unpack  # the corpus is kept packed in git

    unpack()
    by_content: dict[tuple[int, str], Path] = {}
    for p in sorted(p.resolve() for d in SOURCES if d.is_dir() for p in d.glob("*.sqlite")):
        with p.open("rb") as f:
            key = (p.stat().st_size, hashlib.sha256(f.read(1 << 20)).hexdigest())
        by_content.setdefault(key, p)
    return sorted(by_content.values())


def make_folder(folder: Path, n: int) -> list[Path]:
    sources = distinct_exports()
    if not sources:
        sys.exit("no exports found in " + ", ".join(map(str, SOURCES)))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"r{i:03d}.sqlite").symlink_to(sources[i % len(sources)])
    return sources


def run(folder: Path, out: Path, *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its workers)."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "nsys_diagnose", str(folder), "-o", str(out), *extra],
                       cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode not in (0, 1):
        sys.exit(f"batch failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def table(out: Path) -> list[dict]:
    """reports.parquet without the columns that hold timings; floats to 9 digits (DuckDB's
    parallel aggregates vary in the last bits from run to run)."""
    import pyarrow.parquet as pq
    rows = pq.read_table(out / "reports.parquet").drop(["seconds", "cached", "rules"]).to_pylist()
    return sorted(({k: (float(f"{v:.9g}") if isinstance(v, float) else v) for k, v in r.items()} for r in rows),
                  key=lambda r: r["name"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="reports in the folder (default 100)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ap.add_argument("--jobs", default=",".join(map(str, sorted({1, cores} | {2 ** i for i in range(1, 8) if 2 ** i < cores}))),
                    help="comma-separated -j values; 1 is the serial baseline (default 1, powers of 2, all cores)")
    ap.add_argument("--dask", action="store_true", help="also run on a local Dask cluster")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "nsys-diagnose-batch-bench")
    args = ap.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    folder = args.dir / "inputs"
    sources = make_folder(folder, args.n)
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"{args.n} reports ({size / 1e6:,.0f} MB, links to {len(sources)} distinct exports) in {folder}; "
          f"{cores} core(s); python {sys.version.split()[0]}")
    print()
    print(f"{'run':<34} {'wall s':>8} {'reports/s':>10} {'s/report':>9} {'speed-up':>9} {'CPU s':>8}")
    results = {}
    baseline = None
    for j in jobs:
        out = args.dir / f"out-j{j}"
        wall, cpu = run(folder, out, "-j", str(j), "--no-cache")
        baseline = baseline or wall
        results[j] = out
        label = "serial (-j 1, in process)" if j == 1 else f"parallel (-j {j} worker processes)"
        print(f"{label:<34} {wall:>8.1f} {args.n / wall:>10.2f} {wall / args.n:>9.3f} {baseline / wall:>8.2f}x {cpu:>8.1f}")
    first = table(results[jobs[0]])
    for j, out in results.items():
        assert table(out) == first, f"-j {j} differs from -j {jobs[0]}"

    cache = args.dir / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    top = max(jobs)
    for label in ("caches on, cold", "caches on, warm (re-run)"):
        wall, cpu = run(folder, args.dir / "out-cache", "-j", str(top), "--cache-dir", str(cache))
        print(f"{label + f' (-j {top})':<34} {wall:>8.1f} {args.n / wall:>10.2f} {wall / args.n:>9.3f} "
              f"{baseline / wall:>8.2f}x {cpu:>8.1f}")

    if args.dask:
        from dask.distributed import LocalCluster
        with LocalCluster(n_workers=top, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            out = args.dir / "out-dask"
            wall, cpu = run(folder, out, "--executor", "dask", "--scheduler", cluster.scheduler_address, "--no-cache")
            label = f"dask LocalCluster ({top} workers)"
            # worker CPU is not a child of this process here: only the client's is counted
            print(f"{label:<34} {wall:>8.1f} {args.n / wall:>10.2f} {wall / args.n:>9.3f} {baseline / wall:>8.2f}x "
                  f"{'n/a':>8}")
            assert table(out) == first, "dask differs from serial"
    print()
    print("all parallel results equal the serial one (reports.parquet without timings)")


if __name__ == "__main__":
    main()
