"""The step-time budget (analyzer/ingest/sql/budget.sql) on every real export: each
(device, process)'s slices add up to its steady-state window exactly, and the verdicts hold."""

from __future__ import annotations

import pytest
import yaml
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.synthetic import expand, write_export

from .conftest import FIXTURES, H200, PUBLIC, needs_shared, scenario_file

EXPORTS = sorted([*H200.glob("*.sqlite"), *PUBLIC.glob("*.sqlite"), *(FIXTURES / "exports").glob("*.sqlite")])


@pytest.fixture(scope="module", params=EXPORTS, ids=lambda p: p.stem)
def trace(request):
    t = open_trace(request.param)
    yield t
    t.close()


def test_slices_add_up_to_the_window(trace):
    rows = trace.con.execute("""
        SELECT b.device_id, b.pid, sum(b.ns), any_value(b.window_ns), any_value(s.end_ns - s.start_ns), min(b.ns)
        FROM budget b JOIN steady_state s USING (pid) GROUP BY ALL""").fetchall()
    for device, pid, total, window, steady, smallest in rows:
        assert total == window == steady, (device, pid)
        assert smallest > 0


def test_gpu_slices_are_the_busy_union(trace):
    """Overlapping operations count once: the GPU slices sum to the busy union in the window."""
    rows = trace.con.execute("""
        WITH gpu AS (SELECT device_id, pid, sum(ns) AS ns FROM budget WHERE kind = 'gpu' GROUP BY ALL),
        busy AS (
          SELECT b.device_id, b.pid, sum(least(b.end_ns, s.end_ns) - greatest(b.start_ns, s.start_ns)) AS ns
          FROM gpu_busy b JOIN steady_state s USING (pid)
          WHERE b.end_ns > s.start_ns AND b.start_ns < s.end_ns GROUP BY ALL)
        SELECT g.ns, b.ns FROM gpu g FULL JOIN busy b USING (device_id, pid)""").fetchall()
    for ours, union in rows:
        assert ours == union


def test_summary_verdict_follows_the_busy_share(trace):
    for busy_pct, bound, window, busy, idle in trace.con.execute(
            "SELECT busy_pct, bound, window_ns, busy_ns, idle_ns FROM steady_summary").fetchall():
        assert busy + idle == window
        expected = "gpu-bound" if busy_pct >= 80 else "host-bound" if busy_pct <= 50 else "mixed"
        assert bound == expected


H200_VERDICTS = {  # verified in the traces (see fixtures/exports/PROVENANCE.md and the H200 README)
    "dataloader_bound": ("host-bound", "idle", "host code", "Data Loading"),
    "launch_bound": ("host-bound", "idle", "launch", "train_step"),
    "compute_fp32": ("gpu-bound", "gpu", "fp32 math", None),
    "compute_bf16": ("gpu-bound", "gpu", "tensor-core math", None),
    "transfer_pageable": ("gpu-bound", "gpu", "copies", None),
    "launch_graphs": ("gpu-bound", "gpu", "CUDA graph replays", None),
}


@needs_shared
@pytest.mark.parametrize("name", sorted(H200_VERDICTS))
def test_h200_budget_names_the_built_in_cause(name):
    path = H200 / f"{name}.sqlite"
    bound, kind, cause, place = H200_VERDICTS[name]
    t = open_trace(path)
    try:
        assert t.con.execute("SELECT bound FROM steady_summary").fetchall() == [(bound,)]
        top = t.con.execute("SELECT kind, cause, place FROM budget ORDER BY ns DESC LIMIT 1").fetchone()
        assert top == (kind, cause, place)
    finally:
        t.close()


@needs_shared
def test_step_time_is_on_the_gpu_timeline():
    """The host enqueues compute_fp32's steps in microseconds; the GPU takes ~43 ms each."""
    path = H200 / "compute_fp32.sqlite"
    t = open_trace(path)
    try:
        median, = t.con.execute("SELECT step_median_ns FROM steady_summary").fetchone()
        firsts = [r[0] for r in t.con.execute("""
            SELECT min(k.start_ns) FROM kernels k JOIN steps s ON s.pid = k.pid
              AND k.launch_start_ns >= s.start_ns AND k.launch_start_ns < s.end_ns
            WHERE s.step >= 2 GROUP BY s.step ORDER BY s.step""").fetchall()]
        periods = sorted(b - a for a, b in zip(firsts, firsts[1:]))
        assert median == pytest.approx(periods[len(periods) // 2], rel=0.05)
        assert median > 30_000_000
    finally:
        t.close()


FLOODS = {  # scenario -> the budget's largest idle cause: the call issued one by one, not launches
    "call-flood/fires-item-per-sample": "copy", "call-flood/fires-memsets-one-by-one": "copy",
    "call-flood/fires-event-query-polling": "sync", "launch-bound-loop/fires-tiny-kernels-launched-one-by-one": "launch",
}


@pytest.mark.parametrize("name", sorted(FLOODS))
def test_short_gaps_go_to_the_call_that_ends_them(name, tmp_path):
    """A gap under launch_gap_ns is the cost of issuing the operation that ends it: launch overhead
    before a kernel, copies before a copy or memset; time blocked in a sync or a poll is the sync's."""
    given = yaml.safe_load(scenario_file(name).read_text())["given"]
    t = open_trace(write_export(expand(given), tmp_path / "x.sqlite"))
    try:
        top = t.con.execute("SELECT cause FROM budget WHERE kind = 'idle' ORDER BY ns DESC LIMIT 1").fetchone()
        assert top == (FLOODS[name],)
    finally:
        t.close()


def _steps_of_kernels(kernels_per_step: int, host_gap_ns: int) -> dict:
    """Twelve 100 us-kernel steps in NVTX ranges, each kernel launched after host_gap_ns of host code."""
    tid, pid = 281476654432356, 281476654432256
    nvtx, api, kernels, t, corr = [], [], [], 1_000_000, 0
    for _ in range(12):
        start = t
        for _ in range(kernels_per_step):
            corr += 1
            t += host_gap_ns
            api.append({"start": t, "end": t + 3_000, "eventClass": 0, "globalTid": tid, "correlationId": corr, "nameId": 1})
            kernels.append({"start": t + 5_000, "end": t + 105_000, "deviceId": 0, "contextId": 1, "streamId": 7,
                            "correlationId": corr, "globalPid": pid, "demangledName": 2, "shortName": 2})
            t += 105_000
        nvtx.append({"start": start, "end": t, "eventType": 59, "text": "step", "globalTid": tid})
    return {"strings": {1: "cudaLaunchKernel_v7000", 2: "step_kernel"}, "NVTX_EVENTS": nvtx,
            "CUPTI_ACTIVITY_KIND_RUNTIME": api, "CUPTI_ACTIVITY_KIND_KERNEL": kernels}


@pytest.mark.parametrize(("kernels_per_step", "cause"), [(1, "host code"), (8, "launch")])
def test_short_gaps_are_launch_overhead_only_between_many_operations(kernels_per_step, cause, tmp_path):
    """A 60 us host gap before each of many operations a step is the cost of issuing them; before the
    step's one operation (a graph replay, a single kernel) it is the step's host code (launch_ops_per_step)."""
    t = open_trace(write_export(expand(_steps_of_kernels(kernels_per_step, 60_000)), tmp_path / "x.sqlite"))
    try:
        top = t.con.execute("SELECT cause, place FROM budget WHERE kind = 'idle' ORDER BY ns DESC LIMIT 1").fetchone()
        assert top == (cause, "step")
    finally:
        t.close()


# Kernels whose names carry a half-precision type but do no matrix math (real names from the
# corpus): a format word alone does not make tensor-core math; GEMMs keep their class.
KERNEL_CLASSES = [
    ("moe_nonzero_sync", "indexFuncLargeIndex<c10::BFloat16", "elementwise/reduction"),
    ("healthy_fp16_convnet_infer", "max_pool_forward_nhwc<c10::Half", "other kernels"),
    ("healthy_bf16_transformer", "GammaBetaBackwardCUDAKernelTemplate<c10::BFloat16", "elementwise/reduction"),
    ("d2d_clone_copies", "CatArrayBatchedCopy", "elementwise/reduction"),
    ("cudnn_benchmark_multiscale", "convertTensor_kernel<float, __nv_bfloat16", "other kernels"),
    ("d2d_clone_copies", "nvjet_sm90_tst", "tensor-core math"),
    # XLA's loop and reduction fusions are memory passes; its Triton GEMMs say no format
    ("jax_mlp_kernels_healthy", "loop_add_fusion", "elementwise/reduction"),
    ("jax_mlp_kernels_healthy", "input_convert_reduce_fusion", "elementwise/reduction"),
    ("jax_mlp_kernels_healthy", "gemm_fusion_dot", "matrix math"),
]


@pytest.mark.parametrize(("name", "kernel", "cls"), KERNEL_CLASSES, ids=[f"{n}-{c}" for n, _, c in KERNEL_CLASSES])
def test_a_format_word_alone_is_not_tensor_core_math(name, kernel, cls):
    path = FIXTURES / "exports" / f"{name}.sqlite"
    if not path.exists():
        pytest.skip(f"{path.name} not unpacked")
    t = open_trace(path)
    try:
        classes = {c for (c,) in t.con.execute("SELECT DISTINCT class FROM kernel_classes WHERE contains(name, ?)",
                                                [kernel]).fetchall()}
        assert classes == {cls}, classes
    finally:
        t.close()
