"""What the rules could not look at (the report's `coverage`): a capture whose GPU side is
missing, that ends before a steady state, whose timestamps run backwards, or whose steady state
is too short for a step time. Each gap says what is missing, in figures, and how to capture it.

"No bottleneck found" means something only where the rules could look: the report's headline,
the batch summary and `compare` read the status (docs/coverage.md).
- could-not-look: nothing to diagnose a step with (no GPU activity; every process with GPU work
  stops before its steady state);
- partial: the rules looked, at less than a full capture (records dropped for their timestamps,
  a process cut short, too few steps for a step time, most of a steady state in CUDA graph replays
  whose kernels were not traced);
- complete: none of these.
"""

from __future__ import annotations

import duckdb
from nsys_diagnose.engine.model import Coverage, Gap, Metrics, SteadyState
from nsys_diagnose.ingest import settings
from nsys_diagnose.ingest.settings import SettingValues
from nsys_diagnose.ingest.sql_library import query
from nsys_diagnose.units import duration, pct

MIN_STEADY_STEPS = 3  # steps after the first: fewer give no step time worth a median

GPU_SOURCES = {"kernel": "kernels", "memcpy": "memory copies", "memset": "memsets", "graph": "CUDA graph replays"}

NO_GPU_CAPTURE = (
    "Trace CUDA over the part of the run that does GPU work: nsys profile --trace cuda,nvtx,osrt, with "
    "--delay/--duration or --capture-range covering the training steps. If CUDA API calls are traced and "
    "still no kernel is, CUPTI lost the GPU side: update the driver and nsys, and on cloud GPUs set "
    "CuptiUseRawGpuTimestamps=false in the nsys configuration.")
CUT_CAPTURE = (
    "Capture at least {n} steps after the first: a longer --duration, or --capture-range=cudaProfilerApi "
    "(or nvtx) around steps 2 to 10, with the loop marked by an NVTX range per step.")
BACKWARDS_CAPTURE = (
    "Timestamps that run backwards come from CUPTI's clock on long captures: capture a shorter window "
    "(--duration, or --capture-range around a few steps) with a current nsys and driver; the figures "
    "here leave those records out.")
OPAQUE_GRAPHS_CAPTURE = (
    "Re-profile with nsys profile --cuda-graph-trace=node, which records the kernels inside each replay "
    "(a little more overhead per replay), then run nsys-diagnose again.")
FEW_STEPS_CAPTURE = (
    "Capture more steps: at least {n} after the first (a longer --duration, or --capture-range around more "
    "iterations); the step time here is the median of {steps}.")


def _gpu_gap(has_api: bool) -> Gap:
    what = ("No CUDA activity was captured: the export has no kernels, memory copies or memsets"
            + (" (CUDA API calls were traced, but none ran work on a GPU)." if has_api else "."))
    return Gap(id="no-gpu-activity", message=what, capture=NO_GPU_CAPTURE)


def _backwards(con: duckdb.DuckDBPyConnection) -> Gap | None:
    rows = sorted(con.table("record_checks").select("source, records, backwards, zero_length").fetchall())
    bad = [r for r in rows if r[2] + r[3] > 0]
    if not bad:
        return None
    parts = []
    for source, records, back, zero in bad:
        what = GPU_SOURCES.get(source, "CUDA API calls")
        counts = " and ".join(x for x in (f"{back:,} end before they start (left out)" if back else "",
                                          f"{zero:,} last 0 ns" if zero else "") if x)
        parts.append(f"of {records:,} {what}, {counts}")
    gpu_bad = sum(r[2] + r[3] for r in bad if r[0] in GPU_SOURCES)
    gpu_all = sum(r[1] for r in rows if r[0] in GPU_SOURCES)
    share = f" ({pct(100 * gpu_bad / gpu_all)} of the GPU records)" if gpu_bad and gpu_all else ""
    return Gap(id="timestamps-backwards", capture=BACKWARDS_CAPTURE,
               message=f"Timestamps run backwards: {'; '.join(parts)}{share}.",
               evidence={r[0]: {"records": r[1], "backwards": r[2], "zero_length": r[3]} for r in bad})


def _cut_short(con: duckdb.DuckDBPyConnection) -> list[Gap]:
    """Processes with GPU work whose step ranges appear, but too few times to make a loop: the
    capture stopped in the first steps, before a steady state (the ingest's cut_short table)."""
    return [Gap(id="startup-only", pid=pid, capture=CUT_CAPTURE.format(n=MIN_STEADY_STEPS),
                message=(f"The capture stops before pid {pid}'s steady state: it holds {ranges} step range(s) "
                         f"(\"{name}\"), and the first step pays start-up (module loading, autotuning, "
                         "allocator warm-up), so its figures are start-up, not the loop."),
                evidence={"pid": pid, "step_ranges": ranges})
            for pid, ranges, name in sorted(con.table("cut_short").fetchall())]


def _few_steps(steady: list[SteadyState]) -> list[Gap]:
    out = []
    for s in steady:
        if s.method == "steps" and s.steps is not None and s.steps < MIN_STEADY_STEPS:
            out.append(Gap(id="too-few-steps", pid=s.pid,
                           capture=FEW_STEPS_CAPTURE.format(n=MIN_STEADY_STEPS, steps=f"{s.steps} step(s)"),
                           message=(f"pid {s.pid}'s steady state holds {s.steps} step(s) after the first: too few "
                                    f"for a step time (at least {MIN_STEADY_STEPS} are needed)."),
                           evidence={"pid": s.pid, "device_id": s.device_id, "steps": s.steps}))
    return out


def _opaque_graphs(con: duckdb.DuckDBPyConnection, min_pct: float) -> list[Gap]:
    """Replays traced as whole graphs holding `min_pct` of a steady state or more: "no bottleneck"
    would speak of GPU time that was not recorded."""
    out = []
    for pid, device_id, replays, graphs, replay_ns, window_ns in con.execute(query("report_opaque_graphs")).fetchall():
        share = 100 * replay_ns / window_ns if window_ns else 0.0
        if share < min_pct:
            continue
        out.append(Gap(id="graph-kernels-untraced", pid=pid, capture=OPAQUE_GRAPHS_CAPTURE,
                       message=(f"The kernels inside pid {pid}'s CUDA graph replays were not traced: {replays:,} "
                                f"replays of {graphs:,} graph(s) take {duration(replay_ns)} on GPU {device_id}, "
                                f"{pct(share)} of its steady state, and no kernel rule could look inside them."),
                       evidence={"pid": pid, "device_id": device_id, "replays": replays, "graphs": graphs,
                                 "replay_ns": replay_ns, "window_ns": window_ns}))
    return out


def compute(con: duckdb.DuckDBPyConnection, metrics: Metrics, steady: list[SteadyState], has_gpu: bool,
            values: SettingValues | None = None) -> Coverage:
    """`values`: the run's settings (opaque_graph_min_pct)."""
    if not has_gpu:
        return Coverage(status="could-not-look", gaps=[_gpu_gap(metrics.api_count > 0)])
    gaps = [g for g in (_backwards(con),) if g] + _cut_short(con)
    seen = {(g.pid, g.id) for g in gaps}
    gaps += [g for g in _few_steps(steady) if (g.pid, "startup-only") not in seen]
    opaque = _opaque_graphs(con, settings.value("opaque_graph_min_pct", values))
    gaps += [g for g in opaque if (g.pid, "startup-only") not in seen]
    gpu_pids = {p.pid for p in metrics.processes}
    cut = {g.pid for g in gaps if g.id == "startup-only"}
    if gpu_pids and gpu_pids <= cut:
        status = "could-not-look"
    else:
        status = "partial" if gaps else "complete"
    return Coverage(status=status, gaps=gaps)
