#!/usr/bin/env python3
"""nsys-diagnose's whole default rule pack against nsys 2022.4 on the same export (issues #8, #15).

Prints, in one run and side by side, wall time, CPU time and peak RSS of
  - the floor: one DuckDB scan of the source tables and columns the ingest reads, copied into
    a fresh .duckdb file (a cold run cannot cost less; issue 15's target is cold <= 2.5x this);
  - nsys-diagnose cold: a fresh cache, so ingest (copy into DuckDB + the ingest SQL) + every
    rule + the report, the whole CLI process;
  - nsys-diagnose warm: the same command again, the cache reused (best of --repeat runs);
  - nsys stats gpukernsum alone, and the equivalent nsys set (stats gpukernsum, cudaapisum,
    gpumemtimesum, gpumemsizesum, nvtxsum + analyze gpu-starv, gpu-low-util, cuda-sync-api,
    cuda-async-memcpy),
then the ratios, our time per stage (ingest per SQL file, open, each rule, report) cold and
warm, and with --nvtx the NVTX-heavy exports (attribution time against NVTX rows). nsys is
optional: without it on PATH (or with --no-nsys), ours alone. Usage:

    python bench/benchmark.py /tmp/nsysbench/k1e7.sqlite [--nvtx A.sqlite B.sqlite] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NSYS_STATS = ["gpukernsum", "cudaapisum", "gpumemtimesum", "gpumemsizesum", "nvtxsum"]
NSYS_RULES = ["gpu-starv", "gpu-low-util", "cuda-sync-api", "cuda-async-memcpy"]

# Runs in a child process, so that its peak RSS is one analysis alone. Times each stage of one
# analysis (open_trace + report_from_trace, the report cache bypassed): the ingest SQL per file (cold only:
# a cache hit runs none), opening the trace, each rule, and the rest (metrics, ranking, Markdown).
STAGES = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import duckdb
from nsys_diagnose import trace_report as A
from nsys_diagnose.ingest import database as D
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.report import markdown
rules = load_rules()
imports = time.perf_counter() - t0
from bench.ingest_statements import time_statements
per_file, per_rule, stage, per_stmt = {}, {}, {}, {}
time_statements(per_file, per_stmt)
from nsys_diagnose.engine import runner as R
run_on, run_rules = R._run_on, R.run_rules
def timed_rule(cursor, rule, *a, **k):  # a rule's wall time, beside the others running with it
    s = time.perf_counter(); r = run_on(cursor, rule, *a, **k); per_rule[rule.id] = time.perf_counter() - s; return r
def timed_rules(*a, **k):
    s = time.perf_counter(); r = run_rules(*a, **k); stage["rules_s"] = time.perf_counter() - s; return r
R._run_on, A.run_rules = timed_rule, timed_rules
# open_trace + report_from_trace, not analyze(): the report cache would answer a repeat without a query,
# and this measures the rule pack itself on the ingest cache
s = time.perf_counter()
trace = D.open_trace(sys.argv[1], cache_dir=Path(sys.argv[2]))
stage["open_s"] = time.perf_counter() - s
report = A.report_from_trace(trace, rules, {}, None)
text = markdown.render(report)
trace.close()
total = time.perf_counter() - s
stage.update(imports_s=imports, report_s=total - stage["open_s"] - stage["rules_s"], from_cache=report.input.from_cache)
print(json.dumps({"stage": stage, "per_file": per_file, "per_rule": per_rule, "headline": report.headline,
                  "per_statement": per_stmt}))
"""


# The floor (issue 15): one DuckDB scan of the source tables and columns the ingest reads, each
# copied into a fresh .duckdb file as the ingest's reader projects it. A cold run cannot cost
# less than this; the target is cold <= 2.5x floor.
FLOOR = r"""
import sys
from pathlib import Path
from bench.ingest_statements import floor_copy
floor_copy(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def run(cmd: list[str], cwd: Path | None = None) -> dict:
    """Wall s, CPU s (user + sys) and peak RSS MB of one child process, plus its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # GNU time reports this child's own peak RSS; without it, RUSAGE_CHILDREN gives the largest so far
    gnu_time = Path("/usr/bin/time").exists()
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-f", "%M", "-o", tf.name, *cmd] if gnu_time else cmd
        out = subprocess.run(full, capture_output=True, text=True, env=env, cwd=cwd or ROOT)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss_kb = int(Path(tf.name).read_text().split()[-1]) if gnu_time and Path(tf.name).read_text().strip() \
            else after.ru_maxrss
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "rss_mb": rss_kb / 1024, "rc": out.returncode, "stdout": out.stdout, "stderr": out.stderr[-2000:]}


def cli(path: Path, cache: Path) -> list[str]:
    # (a file, not /dev/null: the CLI writes reports to regular files only)
    return [sys.executable, "-m", "nsys_diagnose", str(path), "--cache-dir", str(cache), "--format", "json",
            "-o", str(cache.parent / "report.json")]


def checked(result: dict, what: str) -> dict:
    if result["rc"] not in (0, 1):  # 1: a finding reached --fail-on, still a full report
        raise SystemExit(f"{what} failed ({result['rc']}):\n{result['stderr']}")
    return result


def ours(path: Path, work: Path, repeat: int) -> dict:
    """Cold (fresh cache) and warm (cache hit) CLI runs, then the stages of each in a child."""
    cache = work / "cache"
    (work / "floor").mkdir()
    floor = checked(run([sys.executable, "-c", FLOOR, str(path), str(work / "floor")]), "floor")
    shutil.rmtree(work / "floor")
    cold = checked(run(cli(path, cache)), "cold run")
    warm = min((checked(run(cli(path, cache)), "warm run") for _ in range(repeat)), key=lambda r: r["wall_s"])
    stages_cold = checked(run([sys.executable, "-c", STAGES, str(path), str(work / "cache-stages")]), "stages")
    stages_warm = checked(run([sys.executable, "-c", STAGES, str(path), str(work / "cache-stages")]), "stages")
    return {"floor": floor, "cold": cold, "warm": warm,
            "stages_cold": {**json.loads(stages_cold["stdout"]), "rss_mb": stages_cold["rss_mb"]},
            "stages_warm": {**json.loads(stages_warm["stdout"]), "rss_mb": stages_warm["rss_mb"]}}


def nsys(path: Path, work: Path) -> dict[str, dict]:
    exe = shutil.which("nsys")
    got = {}
    for report in NSYS_STATS:
        got[f"stats {report}"] = run([exe, "stats", "-q", "--report", report, "--format", "csv",
                                      "-o", str(work / report), str(path)])
    for rule in NSYS_RULES:
        got[f"analyze {rule}"] = run([exe, "analyze", "-q", "--rule", rule, "--format", "csv",
                                      "-o", str(work / rule), str(path)])
    return got


def count(path: Path, table: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # the table was not captured
        return 0
    finally:
        con.close()


def stage_lines(st: dict, label: str) -> list[str]:
    s = st["stage"]
    lines = [f"\n{label} (one process, peak RSS {st['rss_mb']:.0f} MB, cache {'hit' if s['from_cache'] else 'miss'}): "
             f"imports {s['imports_s']:.2f} s, open {s['open_s']:.2f} s, rules {s['rules_s']:.2f} s, "
             f"metrics + ranking + Markdown {s['report_s']:.2f} s"]
    if st["per_file"]:
        lines.append("\n| ingest SQL file | s |\n|---|---|")
        lines += [f"| {name} | {sec:.2f} |" for name, sec in sorted(st["per_file"].items())]
    if st.get("per_statement"):
        top = sorted(st["per_statement"].items(), key=lambda kv: -kv[1][1])[:10]
        total = sum(v[1] for v in st["per_statement"].values())
        lines.append(f"\n| the ten costliest ingest statements (of {len(st['per_statement'])}, "
                     f"{total:.2f} s in all) | runs | s | share |\n|---|---|---|---|")
        lines += [f"| {name} | {n} | {sec:.2f} | {100 * sec / total:.0f} % |" for name, (n, sec, *_) in top]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", type=Path)
    ap.add_argument("--nvtx", nargs="*", type=Path, default=[], help="NVTX-heavy exports of growing size (linearity)")
    ap.add_argument("--no-nsys", action="store_true", help="skip nsys even when it is installed")
    ap.add_argument("--repeat", type=int, default=3, help="warm runs; the fastest is reported (default 3)")
    ap.add_argument("--json", type=Path, help="also write every figure to this file")
    args = ap.parse_args()
    for p in [args.export, *args.nvtx]:
        if not p.is_file():
            raise SystemExit(f"{p}: no such export")
    use_nsys = not args.no_nsys and shutil.which("nsys") is not None
    lines = []
    out = {"export": str(args.export), "cores": os.cpu_count(), "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="nsysbench-") as tmp:
        work = Path(tmp)
        size = args.export.stat().st_size
        kernels = count(args.export, "CUPTI_ACTIVITY_KIND_KERNEL")
        out.update(size_bytes=size, kernels=kernels)
        me = ours(args.export, work, args.repeat)
        theirs = nsys(args.export, work) if use_nsys else {}
        out.update(ours=me, nsys=theirs)
        load = os.getloadavg()
        lines.append(f"# {args.export} ({size / 1e9:.2f} GB, {kernels:,} kernels), {os.cpu_count()} cores, "
                     f"load average {out['load_before'][0]:.1f} before, {load[0]:.1f} after\n")
        sw = me["stages_warm"]["stage"]
        pack = {"wall_s": sw["open_s"] + sw["rules_s"] + sw["report_s"], "cpu_s": None,  # in process: no CPU figure
                "rss_mb": me["stages_warm"]["rss_mb"], "rc": 0}
        me["rule_pack"] = pack
        rows = [("floor: one DuckDB scan of the source tables and columns read (copied into a .duckdb file)",
                 me["floor"]),
                ("nsys-diagnose cold: first run, fresh caches (ingest + rules + report, whole process)", me["cold"]),
                ("nsys-diagnose rule pack on the ingest cache (open + every rule + report, in process)", pack),
                (f"nsys-diagnose repeat run: report cache hit (whole process, best of {args.repeat})", me["warm"])]
        rows += [(f"nsys {name}", r) for name, r in theirs.items()]
        if theirs:
            ok = [r for r in theirs.values() if r["rc"] == 0]
            rows.append(("nsys, the equivalent set (sum)", {"wall_s": sum(r["wall_s"] for r in ok),
                                                           "cpu_s": sum(r["cpu_s"] for r in ok),
                                                           "rss_mb": max(r["rss_mb"] for r in ok), "rc": 0}))
        lines.append("| run | wall s | CPU s | peak RSS MB |\n|---|---|---|---|")
        for name, r in rows:
            failed = "" if r["rc"] in (0, 1) else f" (failed: exit {r['rc']})"
            cpu = "-" if r["cpu_s"] is None else f"{r['cpu_s']:.2f}"
            lines.append(f"| {name}{failed} | {r['wall_s']:.2f} | {cpu} | {r['rss_mb']:.0f} |")
        floor_s = me["floor"]["wall_s"]
        lines.append("\n| ratio (wall) | value | target |\n|---|---|---|")
        lines.append(f"| cold / floor | {me['cold']['wall_s'] / floor_s:.2f}x | <= 2.5x |")
        lines.append(f"| cold CPU / floor CPU | {me['cold']['cpu_s'] / me['floor']['cpu_s']:.2f}x | |")
        lines.append(f"| repeat run | {me['warm']['wall_s']:.2f} s | < 0.5 s |")
        out["ratios"] = {"cold_over_floor": me["cold"]["wall_s"] / floor_s,
                         "cold_cpu_over_floor_cpu": me["cold"]["cpu_s"] / me["floor"]["cpu_s"]}
        if theirs and theirs["stats gpukernsum"]["rc"] == 0:
            kern = theirs["stats gpukernsum"]["wall_s"]
            total = sum(r["wall_s"] for r in theirs.values() if r["rc"] == 0)
            ours_runs = {"cold": me["cold"]["wall_s"], "rule_pack": pack["wall_s"], "repeat": me["warm"]["wall_s"]}
            lines.append("\n| ratio (wall) | cold | rule pack | repeat | target |\n|---|---|---|---|---|")
            lines.append("| nsys gpukernsum alone / ours | " + " | ".join(f"{kern / v:.2f}x" for v in ours_runs.values())
                         + " | >= 5x |")
            lines.append("| nsys equivalent set / ours | " + " | ".join(f"{total / v:.2f}x" for v in ours_runs.values())
                         + " | >= 20x |")
            out["ratios"].update({f"{who}_{run}": ref / v for who, ref in (("gpukernsum", kern), ("set", total))
                                  for run, v in ours_runs.items()})
        lines += stage_lines(me["stages_cold"], "our stages, cold")
        lines += stage_lines(me["stages_warm"], "our stages, warm")
        lines.append("\n| rule (its wall time, run beside the others) | cold s | warm s |\n|---|---|---|")
        warm_rules = me["stages_warm"]["per_rule"]
        for rule, sec in sorted(me["stages_cold"]["per_rule"].items(), key=lambda kv: -warm_rules.get(kv[0], 0)):
            lines.append(f"| {rule} | {sec:.3f} | {warm_rules.get(rule, float('nan')):.3f} |")
        lines.append(f"\nheadline: {re.sub(r'[*`]', '', me['stages_warm']['headline'])}")
        if args.nvtx:
            lines.append("\n| NVTX-heavy export | kernels | NVTX rows | cold wall s | CPU s | peak RSS MB "
                         "| 20_phases + 21_nvtx s | per 1e6 NVTX rows | nsys stats nvtxsum s |"
                         "\n|---|---|---|---|---|---|---|---|---|")
            out["nvtx"] = []
            for p in args.nvtx:
                rows_n, kern_n = count(p, "NVTX_EVENTS"), count(p, "CUPTI_ACTIVITY_KIND_KERNEL")
                r = checked(run([sys.executable, "-c", STAGES, str(p), str(work / f"cache-{p.stem}")]), p.name)
                per_file = json.loads(r["stdout"])["per_file"]
                nvtx_s = per_file.get("phases.sql", 0) + per_file.get("nvtx.sql", 0)
                theirs_nvtx = run([shutil.which("nsys"), "stats", "-q", "--report", "nvtxsum", "--format", "csv",
                                   "-o", str(work / f"nvtxsum-{p.stem}"), str(p)]) if use_nsys else None
                out["nvtx"].append({"export": str(p), "nvtx_rows": rows_n, "kernels": kern_n, **r,
                                    "per_file": per_file, "nsys_nvtxsum": theirs_nvtx})
                nsys_s = f"{theirs_nvtx['wall_s']:.2f}" if theirs_nvtx and theirs_nvtx["rc"] == 0 else "-"
                lines.append(f"| {p.name} | {kern_n:,} | {rows_n:,} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} "
                             f"| {r['rss_mb']:.0f} | {nvtx_s:.2f} | {nvtx_s / (rows_n / 1e6):.2f} | {nsys_s} |")
    print("\n".join(lines))
    if args.json:
        for r in [me["floor"], me["cold"], me["warm"], *theirs.values(), *out.get("nvtx", []),
                  *(n["nsys_nvtxsum"] for n in out.get("nvtx", []) if n["nsys_nvtxsum"])]:
            r.pop("stdout", None)
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
