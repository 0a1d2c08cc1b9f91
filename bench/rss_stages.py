#!/usr/bin/env python3
"""Where a cold run's peak RSS is (issue 36): one analysis (the CLI's, `--no-cache`) in this
process, its RSS sampled every 20 ms and charged to the stage running then (each ingest
statement, each rule, the report), and the stages printed by their peak. A sampler in the
process itself: the figures are the process's VmRSS, as `ru_maxrss` counts it.

    python bench/rss_stages.py EXPORT [--top 15] [CLI options, e.g. --select hot-kernels]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export")
    ap.add_argument("--top", type=int, default=15, help="stages printed, by peak")
    a, extra = ap.parse_known_args()  # the rest: CLI options, passed on

    from nsys_diagnose.engine import runner
    from nsys_diagnose.ingest import progress
    from nsys_diagnose.main import main as cli

    now = ["starting"]
    order: list[str] = []
    peak: dict[str, int] = {}
    spent: dict[str, float] = {}
    lock = threading.Lock()
    t_stage = [time.perf_counter()]

    def enter(text: str) -> None:
        with lock:
            t = time.perf_counter()
            spent[now[0]] = spent.get(now[0], 0.0) + t - t_stage[0]
            now[0], t_stage[0] = text, t
            if text not in peak:
                order.append(text)
                peak[text] = 0

    stage = progress.stage
    def staged(text: str, *x, **k) -> None:
        if not text.startswith("rules ("):  # "rules (3/28 done)": the rule now running is the stage
            enter(text)
        stage(text, *x, **k)
    progress.stage = staged  # type: ignore[assignment]
    run_on = runner._run_on

    def timed_rule(cursor, rule, *x, **k):
        enter(f"rule {rule.id}")
        return run_on(cursor, rule, *x, **k)
    runner._run_on = timed_rule  # type: ignore[assignment]
    rules = runner.run_rules

    def after_rules(*x, **k):
        try:
            return rules(*x, **k)
        finally:
            enter("report (metrics, budget, Markdown)")
    runner.run_rules = after_rules  # type: ignore[assignment]
    import nsys_diagnose.trace_report as trace_report
    trace_report.run_rules = after_rules  # type: ignore[assignment]

    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            kb = rss_kb()
            with lock:
                peak[now[0]] = max(peak.get(now[0], 0), kb)
            stop.wait(0.02)
    enter("imports and start-up")
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        sys.argv = ["nsys-diagnose", a.export, "--no-cache", "--fail-on", "never", "-o", str(Path(d) / "r.md"), *extra]
        code = 0
        try:
            cli()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0
    enter("end")
    stop.set()
    sampler.join()
    total = time.perf_counter() - started
    print(f"{a.export}: exit {code}, {total:.1f} s, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    print(f"{'stage':72} {'s':>7} {'peak MiB':>9}")
    ranked = sorted((s for s in order if s != "end"), key=lambda s: -peak[s])[: a.top]
    for s in sorted(ranked, key=order.index):
        print(f"{s[:72]:72} {spent.get(s, 0.0):7.1f} {peak[s] / 1024:9.0f}")


if __name__ == "__main__":
    main()
