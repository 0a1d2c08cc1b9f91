#!/usr/bin/env python3
"""Time and peak RSS of a cold run on hostile exports (issue 36): huge strings, many distinct
names. Run on demand; prints one row per case. The suite keeps small versions of these cases
(tests/test_hardening.py); this shows the figures at full size.

    python bench/hostile_memory.py [--mb 10] [--kernels 1000000] [--names 100000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.synth import write_export  # noqa: E402
from tests.test_bad_inputs import base_tables, kernel  # noqa: E402


def huge_kernel_name(folder: Path, mb: int) -> Path:
    tables = base_tables()
    tables["StringIds"][1]["value"] = "k" * (mb << 20)
    return write_export(tables, folder / "huge_kernel_name.sqlite")


def huge_nvtx_texts(folder: Path, mb: int, count: int = 20) -> Path:
    tables = base_tables()
    gtid = tables["CUPTI_ACTIVITY_KIND_RUNTIME"][0]["globalTid"]
    tables["NVTX_EVENTS"] = [{"start": 1_000_000 + i * 1_000_000, "end": 1_500_000 + i * 1_000_000, "eventType": 59,
                              "globalTid": gtid, "text": f"{i}" + "r" * (mb << 20), "textId": None, "domainId": 0,
                              "endGlobalTid": None} for i in range(count)]
    return write_export(tables, folder / "huge_nvtx_texts.sqlite")


def many_names(folder: Path, kernels: int, names: int) -> Path:
    tables = base_tables()
    tables["StringIds"] = [tables["StringIds"][0]] + [{"id": 2 + i, "value": f"kernel_{i}"} for i in range(names)]
    tables["CUPTI_ACTIVITY_KIND_KERNEL"] = [kernel(10_000 + i * 2_000, 11_000 + i * 2_000, i + 1, name_id=2 + i % names)
                                            for i in range(kernels)]
    tables["CUPTI_ACTIVITY_KIND_RUNTIME"] = tables["CUPTI_ACTIVITY_KIND_RUNTIME"][:1]
    return write_export(tables, folder / f"k{kernels}_names{names}.sqlite")


def measure(path: Path) -> tuple[float, float, int]:
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "import resource, sys; from nsys_diagnose.main import main; "
                        "sys.argv = ['nsys-diagnose', sys.argv[1], '--no-cache', '-o', sys.argv[1] + '.md', '--fail-on', 'never']\n"
                        "try: main()\nexcept SystemExit as e: code = e.code\n"
                        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code, file=sys.stderr)", str(path)],
                       capture_output=True, text=True)
    seconds = time.perf_counter() - started
    rss_kb, code = r.stderr.strip().splitlines()[-1].split()
    return seconds, int(rss_kb) / 1024, int(code) if code != "None" else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--names", type=int, default=100_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        cases = [huge_kernel_name(folder, a.mb), huge_nvtx_texts(folder, a.mb), many_names(folder, a.kernels, a.names)]
        print(f"{'export':40} {'MB':>7} {'seconds':>8} {'peak RSS MiB':>13} {'exit':>5}")
        for path in cases:
            seconds, rss, code = measure(path)
            print(f"{path.name:40} {path.stat().st_size / 1e6:7.1f} {seconds:8.1f} {rss:13.0f} {code:5}")
    print(f"(peak RSS of the whole process; {resource.getpagesize()} B pages)")


if __name__ == "__main__":
    main()
