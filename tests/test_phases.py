"""Phases (analyzer/ingest/sql/phases.sql): the NVTX stack, steps and the steady-state window."""

from __future__ import annotations

import pytest
from nsys_diagnose.ingest.database import open_trace

from .conftest import H200, needs_shared
from .synth import expand, write_export

PID = 100
GPID = 2**48 + PID * 2**24
GTID = GPID + PID  # the main thread: tid = pid


def _trace(tmp_path, given):
    return open_trace(write_export(expand(given), tmp_path / "t.sqlite"), use_cache=False)


def _rows(trace, sql):
    cur = trace.con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _push(start, end, text, tid=GTID, **kw):
    return {"start": start, "end": end, "eventType": 59, "text": text, "globalTid": tid, **kw}


def _kernel(start, end, corr, name_id=1):
    return {"start": start, "end": end, "deviceId": 0, "contextId": 1, "streamId": 7, "correlationId": corr,
            "globalPid": GPID, "demangledName": name_id, "shortName": name_id}


def test_nvtx_stack_depth_and_parent(tmp_path):
    # outer [0,100] holds a [10,20] and b [20,50] (back to back), b holds c [20,30] (same start);
    # a zero-length z at 60; a second top-level range d [100,120] starting where outer ends.
    nvtx = [_push(0, 100, "outer"), _push(10, 20, "a"), _push(20, 50, "b"), _push(20, 30, "c"),
            _push(60, 60, "z"), _push(100, 120, "d")]
    trace = _trace(tmp_path, {"strings": {1: "k"}, "NVTX_EVENTS": nvtx})
    try:
        rows = {r["name"]: r for r in _rows(trace, "SELECT t.name, t.depth, p.name AS parent FROM nvtx_tree t "
                                                   "LEFT JOIN nvtx_tree p ON p.range_id = t.parent_id")}
    finally:
        trace.close()
    assert {n: (r["depth"], r["parent"]) for n, r in rows.items()} == {
        "outer": (0, None), "a": (1, "outer"), "b": (1, "outer"), "c": (2, "b"), "z": (1, "outer"), "d": (0, None)}


def test_named_step_ranges_are_steps_and_first_step_is_startup(tmp_path):
    # 5 "train_step" ranges of 10 ms, the first one 100 ms; a "log_loss" inside some of them
    nvtx, t = [], 1_000_000
    for i in range(5):
        length = 100_000_000 if i == 0 else 10_000_000
        nvtx.append(_push(t, t + length, "train_step"))
        if i % 2 == 0:
            nvtx.append(_push(t + 1_000_000, t + 2_000_000, "log_loss"))
        t += length + 1_000_000
    kernels = [_kernel(2_000_000 + 11_000_000 * i, 3_000_000 + 11_000_000 * i, i + 1) for i in range(15)]
    trace = _trace(tmp_path, {"strings": {1: "k"}, "NVTX_EVENTS": nvtx, "CUPTI_ACTIVITY_KIND_KERNEL": kernels})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
        steady = _rows(trace, "SELECT * FROM steady_state")
    finally:
        trace.close()
    assert [(s["step"], s["name"], s["source"]) for s in steps] == [(i + 1, "train_step", "nvtx") for i in range(5)]
    assert steps[0]["duration_ns"] == 100_000_000
    assert len(steady) == 1 and steady[0]["method"] == "steps"
    assert steady[0]["start_ns"] == steps[1]["start_ns"]
    assert steady[0]["startup_ns"] == steps[1]["start_ns"] - 1_000_000  # from the process's first event
    assert steady[0]["first_step_ns"] == 100_000_000 and steady[0]["steps"] == 4


def test_steps_left_open_by_a_lost_pop_stay_one_loop(tmp_path):
    # 9 "train_step" ranges of 10 ms; every 3rd one's pop is lost, so it stays open to the end of
    # the capture (nsys ends it there) and the later ones nest one level deeper each time: three
    # at each of three depths, each a "train_step" inside a "train_step"
    capture_end, nvtx, t = 200_000_000, [], 1_000_000
    for i in range(9):
        nvtx.append(_push(t, capture_end if i % 3 == 2 else t + 10_000_000, "train_step"))
        nvtx.append(_push(t + 1_000_000, t + 2_000_000, "forward"))
        t += 11_000_000
    trace = _trace(tmp_path, {"strings": {1: "k"}, "NVTX_EVENTS": nvtx})
    try:
        depths = _rows(trace, "SELECT DISTINCT depth FROM nvtx_tree WHERE name = 'train_step' ORDER BY depth")
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
    finally:
        trace.close()
    assert [d["depth"] for d in depths] == [0, 1, 2]
    assert [s["start_ns"] for s in steps] == [1_000_000 + 11_000_000 * i for i in range(9)]
    assert {s["name"] for s in steps} == {"train_step"}
    # an open step ends where the next one starts; the last one where nsys ended it
    assert [s["duration_ns"] for s in steps] == [10_000_000, 10_000_000, 11_000_000] * 2 + [10_000_000, 10_000_000,
                                                                                            capture_end - 89_000_000]


def test_a_step_range_inside_one_of_its_name_is_not_a_second_step(tmp_path):
    # a decorated function annotated "train_step" called inside a "train_step" range: one range
    # of the name inside each, both closed: the steps are the outer ranges, not twice as many
    nvtx, t = [], 1_000_000
    for _ in range(6):
        nvtx.append(_push(t, t + 10_000_000, "train_step"))
        nvtx.append(_push(t + 1_000_000, t + 9_000_000, "train_step"))
        t += 11_000_000
    trace = _trace(tmp_path, {"strings": {1: "k"}, "NVTX_EVENTS": nvtx})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
    finally:
        trace.close()
    assert [(s["start_ns"], s["duration_ns"]) for s in steps] == [(1_000_000 + 11_000_000 * i, 10_000_000)
                                                                  for i in range(6)]


def test_repeating_sequence_opens_steps_at_its_first_range(tmp_path):
    # "Data Loading" / "Model Computation" / "Backward Pass" four times, no step-named range;
    # "setup" once before (not a loop)
    nvtx, t = [_push(0, 500_000, "setup")], 1_000_000
    for _ in range(4):
        for name, length in (("Data Loading", 5_000_000), ("Model Computation", 2_000_000), ("Backward Pass", 1_000_000)):
            nvtx.append(_push(t, t + length, name))
            t += length
        t += 100_000
    trace = _trace(tmp_path, {"strings": {1: "k"}, "NVTX_EVENTS": nvtx})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
    finally:
        trace.close()
    assert [s["name"] for s in steps] == ["Data Loading"] * 4
    assert [s["start_ns"] for s in steps] == [1_000_000 + i * 8_100_000 for i in range(4)]
    # a step runs to the next step's start; the last one to the end of its last range
    assert [s["duration_ns"] for s in steps] == [8_100_000] * 3 + [8_000_000]
    assert {s["source"] for s in steps} == {"nvtx"}


def test_without_nvtx_a_regular_kernel_marks_the_steps(tmp_path):
    # per 10 ms step: one "fwd" kernel then five "small" ones 100 us apart (irregular period)
    kernels, corr = [], 0
    for i in range(6):
        base = 1_000_000 + i * 10_000_000
        corr += 1
        kernels.append(_kernel(base, base + 2_000_000, corr, 1))
        for j in range(5):
            corr += 1
            kernels.append(_kernel(base + 3_000_000 + j * 100_000, base + 3_050_000 + j * 100_000, corr, 2))
    trace = _trace(tmp_path, {"strings": {1: "fwd", 2: "small"}, "CUPTI_ACTIVITY_KIND_KERNEL": kernels})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
        steady = _rows(trace, "SELECT * FROM steady_state")
    finally:
        trace.close()
    assert [s["name"] for s in steps] == ["kernel fwd"] * 6 and {s["source"] for s in steps} == {"repeated"}
    assert [s["duration_ns"] for s in steps[:-1]] == [10_000_000] * 5
    assert steady[0]["method"] == "steps" and steady[0]["start_ns"] == 11_000_000


def _bursty_loop(steps_kernels):
    """Kernels of a loop without NVTX, fed in bursts: three steps back to back (2 ms apart), then
    one that waits 40 ms for its batch. steps_kernels: the kernel names of each step, in order."""
    kernels, corr, t = [], 0, 1_000_000
    for i, names in enumerate(steps_kernels):
        t += 40_000_000 if i % 3 == 0 else 2_000_000
        for j, name_id in enumerate(names):
            corr += 1
            kernels.append(_kernel(t + j * 200_000, t + j * 200_000 + 100_000, corr, name_id))
    return kernels


def test_without_nvtx_a_bursty_loop_is_found_by_its_launch_count(tmp_path):
    """No kernel's period is regular (CV over max_period_cv), but "fwd" is always four launches
    apart and spans the run: it marks the steps."""
    kernels = _bursty_loop([[1, 2, 3, 3]] * 9)
    trace = _trace(tmp_path, {"strings": {1: "fwd", 2: "bwd", 3: "small"}, "CUPTI_ACTIVITY_KIND_KERNEL": kernels})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
        cv = _rows(trace, """SELECT stddev_pop(p) / avg(p) AS cv FROM (
                             SELECT lead(start_ns) OVER (ORDER BY start_ns) - start_ns AS p FROM kernels WHERE name = 'fwd')""")
    finally:
        trace.close()
    assert cv[0]["cv"] > 0.5
    assert [s["name"] for s in steps] == ["kernel fwd"] * 9 and {s["source"] for s in steps} == {"repeated"}
    assert [s["start_ns"] for s in steps] == [k["start"] for k in kernels if k["demangledName"] == 1]


@pytest.mark.parametrize("why", ["launch count varies", "only one kernel", "a corner of the run"])
def test_a_bursty_loop_without_one_launch_count_has_no_steps(tmp_path, why):
    if why == "launch count varies":  # a data-dependent number of "small" kernels per step
        loop = [[1, 2] + [3] * (1 + i % 4) for i in range(9)]
    elif why == "only one kernel":  # one launch apart: no sequence to repeat
        loop = [[1]] * 9
    else:  # "fwd"/"bwd" repeat only in the first 5 steps, then 60 one-off kernels follow
        loop = [[1, 2]] * 5 + [list(range(10, 70))]
    strings = {1: "fwd", 2: "bwd", 3: "small", **{i: f"k{i}" for i in range(10, 70)}}
    trace = _trace(tmp_path, {"strings": strings, "CUPTI_ACTIVITY_KIND_KERNEL": _bursty_loop(loop)})
    try:
        assert _rows(trace, "SELECT count(*) AS n FROM steps")[0]["n"] == 0
    finally:
        trace.close()


def test_library_ranges_are_not_a_loop_and_a_graph_replay_marks_the_step(tmp_path):
    """XLA's per-operator NVTX ranges (domain TSL), four per step, repeat more often than the step:
    they make no sequence steps. Each step is one CUDA graph replay (a jitted step) and a kernel,
    so its first range and the graph replay both come two launches apart every step; a sync every
    third step repeats the same work too, more regularly in time, but marks three steps."""
    ms, ranges, api, graphs, kernels, corr = 1_000_000, [], [], [], [], 0
    ranges.append({"start": 100, "eventType": 75, "domainId": 1, "text": "TSL", "globalTid": GTID})
    for i in range(12):
        t = 10 * ms + i * 20 * ms + (3 * ms if i % 2 else 0)  # host runs ahead unevenly
        for j in range(4):
            ranges.append(_push(t + j * ms, t + j * ms + 500_000, f"XlaModule:#hlo_module=jit_op{j}#", domainId=1))
        corr += 1
        api.append(_api(t + 5 * ms, t + 5 * ms + 10_000, corr, 1))
        graphs.append({"start": t + 6 * ms, "end": t + 16 * ms, "deviceId": 0, "contextId": 1, "streamId": 7,
                       "correlationId": corr, "globalPid": GPID, "graphId": 1, "graphExecId": 1})
        corr += 1
        api.append(_api(t + 5 * ms + 20_000, t + 5 * ms + 30_000, corr, 1))
        kernels.append(_kernel(t + 16 * ms, t + 16 * ms + 100_000, corr, 3))
        if i % 3 == 2:
            api.append(_api(t + 17 * ms, t + 18 * ms, None, 2))
    strings = {1: "cudaGraphLaunch_v10000", 2: "cudaStreamSynchronize_v3020", 3: "loss_kernel"}
    trace = _trace(tmp_path, {"strings": strings, "NVTX_EVENTS": ranges, "CUPTI_ACTIVITY_KIND_RUNTIME": api,
                              "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": graphs, "CUPTI_ACTIVITY_KIND_KERNEL": kernels})
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
    finally:
        trace.close()
    assert len(steps) == 12 and {s["source"] for s in steps} == {"repeated"}
    assert {s["name"] for s in steps} < {"graph replay", "range XlaModule:#hlo_module=jit_op0#"}
    # a graph replay's steps are on the GPU's clock, a range's on the host's
    assert {s["gpu_clock"] for s in steps} == {steps[0]["name"] == "graph replay"}


def test_no_loop_falls_back_to_gpu_activity(tmp_path):
    trace = _trace(tmp_path, {"strings": {1: "k"}, "CUPTI_ACTIVITY_KIND_KERNEL": [_kernel(1000, 2000, 1)]})
    try:
        assert _rows(trace, "SELECT count(*) AS n FROM steps")[0]["n"] == 0
        steady = _rows(trace, "SELECT * FROM steady_state")
    finally:
        trace.close()
    assert [(s["method"], s["start_ns"], s["end_ns"]) for s in steady] == [("gpu-activity", 1000, 2000)]


# What each H200 program's README says its loop is: step count, step name.
H200_STEPS = {
    "dataloader_bound": (20, "Data Loading"), "launch_bound": (30, "train_step"),
    "launch_graphs": (30, "train_step"), "compute_fp32": (20, "Model Computation"),
    "compute_bf16": (20, "Model Computation"), "transfer_pageable": (20, "Data Loading"),
}


@needs_shared
@pytest.mark.parametrize("name", sorted(H200_STEPS))
def test_h200_steps_and_steady_state(name):
    trace = open_trace(H200 / f"{name}.sqlite")
    try:
        steps = _rows(trace, "SELECT * FROM steps ORDER BY step")
        steady = _rows(trace, "SELECT * FROM steady_state")
        module_after = _rows(trace, "SELECT count(*) AS n FROM api_calls a JOIN steady_state s USING (pid) "
                                    "WHERE a.api LIKE 'cuLibraryLoad%' AND a.start_ns >= s.start_ns")[0]["n"]
    finally:
        trace.close()
    count, step_name = H200_STEPS[name]
    assert len(steps) == count and {s["name"] for s in steps} == {step_name}
    assert len(steady) == 1 and steady[0]["method"] == "steps" and steady[0]["steps"] == count - 1
    assert module_after == 0, "module loading belongs to start-up"
    assert steady[0]["startup_ns"] > 0 and steady[0]["end_ns"] >= steps[-1]["end_ns"]


@needs_shared
def test_h200_multiproc_has_one_window_per_process():
    trace = open_trace(H200 / "multiproc.sqlite")
    try:
        steady = _rows(trace, "SELECT pid, method, steps FROM steady_state ORDER BY pid")
    finally:
        trace.close()
    assert [(s["method"], s["steps"]) for s in steady] == [("steps", 19), ("steps", 19)]


def _reference(name, report):
    import csv

    with (H200 / "reference" / name / f"{name}_{report}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


@needs_shared
@pytest.mark.parametrize("name", sorted(H200_STEPS) + ["multiproc"])
def test_h200_nvtx_breakdown_matches_nvtx_sum_and_gpu_projection(name):
    trace = open_trace(H200 / f"{name}.sqlite")
    try:
        rows = _rows(trace, "SELECT coalesce(domain, '') || ':' || name AS range, duration_ns, gpu_proj_ns, ops, "
                            "graphs, depth, children FROM nvtx_range_stats WHERE style = 'push_pop'")
    finally:
        trace.close()
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(r["range"], []).append(r)
    wall = {k: (len(v), sum(r["duration_ns"] for r in v), min(r["duration_ns"] for r in v),
                max(r["duration_ns"] for r in v)) for k, v in by_name.items()}
    assert wall == {r["Range"]: (int(r["Instances"]), int(r["Total Time (ns)"]), int(r["Min (ns)"]), int(r["Max (ns)"]))
                    for r in _reference(name, "nvtx_sum")}
    # nsys projects only instances that launched kernels, copies or memsets, and leaves CUDA graph
    # replays out (we count them as GPU work); names with graph replays are compared without
    # the projected time, which then differs by design.
    proj = {}
    for k, v in by_name.items():
        hit = [r for r in v if r["ops"] - r["graphs"] > 0]
        if hit:
            graphs = any(r["graphs"] for r in v)
            proj[k] = (None if graphs else sum(r["gpu_proj_ns"] for r in hit), len(hit),
                       sum(r["ops"] - r["graphs"] for r in hit), round(sum(r["depth"] for r in hit) / len(hit), 1),
                       round(sum(r["children"] for r in hit) / len(hit), 1), graphs)
    theirs = {r["Range"]: (int(r["Total Proj Time (ns)"]), int(r["Range Instances"]), int(r["Total GPU Ops"]),
                           float(r["Avg Range Lvl"]), float(r["Avg Num Child"]))
              for r in _reference(name, "nvtx_gpu_proj_sum")}
    assert {k: v[:5] for k, v in proj.items()} == {k: (None if proj.get(k, [0] * 6)[5] else v[0], *v[1:])
                                                    for k, v in theirs.items()}


def _api(start, end, corr, name_id, tid=GTID):
    return {"start": start, "end": end, "eventClass": 0, "globalTid": tid, "correlationId": corr, "nameId": name_id}


def test_idle_gap_causes_classify_the_launching_threads_state(tmp_path):
    # strings: 1 kernel, 2 cudaLaunchKernel, 3 cudaStreamSynchronize, 4 pthread_cond_wait
    # 5 steps of 10 ms: "Data Loading" 6 ms of host code (GPU idle), then a launch and a 3 ms kernel,
    # then a sync that returns when the kernel ends; one step waits in pthread_cond_wait instead
    nvtx, kernels, api, osrt, corr = [], [], [], [], 0
    for i in range(5):
        t = 10_000_000 * (i + 1)
        nvtx.append(_push(t, t + 6_000_000, "Data Loading"))
        if i == 3:
            osrt.append({"start": t + 1_000_000, "end": t + 5_500_000, "globalTid": GTID, "nameId": 4})
        corr += 1
        api.append(_api(t + 6_000_000, t + 6_010_000, corr, 2))
        kernels.append(_kernel(t + 6_020_000, t + 9_020_000, corr))
        corr += 1
        api.append(_api(t + 6_015_000, t + 9_025_000, corr, 3))
    given = {"strings": {1: "k", 2: "cudaLaunchKernel_v7000", 3: "cudaStreamSynchronize_v3020", 4: "pthread_cond_wait"},
             "NVTX_EVENTS": nvtx, "CUPTI_ACTIVITY_KIND_KERNEL": kernels, "CUPTI_ACTIVITY_KIND_RUNTIME": api,
             "OSRT_API": osrt}
    trace = _trace(tmp_path, given)
    try:
        gaps = _rows(trace, "SELECT * FROM idle_gaps ORDER BY start_ns")
        causes = _rows(trace, "SELECT * FROM idle_gap_causes ORDER BY idle_ns DESC")
    finally:
        trace.close()
    # 4 gaps of 7 ms (kernel end + 1 ms .. next launch + 20 us)
    assert [g["duration_ns"] for g in gaps] == [7_000_000] * 4
    assert [g["cause"] for g in gaps] == ["nvtx", "nvtx", "os-call", "nvtx"]
    assert {g["after_blocking_api"] for g in gaps} == {"cudaStreamSynchronize"}
    # 5 us of the sync that returned as the GPU drained, 5 us of the next step's sync
    assert gaps[0]["launch_ns"] == 10_000 and gaps[0]["sync_ns"] == 10_000
    assert gaps[2]["osrt_ns"] == 4_500_000 and gaps[2]["detail"] == "pthread_cond_wait"
    # the steady state starts at the second step: the first gap (before step 2) is start-up
    assert [g["in_steady_state"] for g in gaps] == [False, True, True, True]
    assert [(c["cause"], c["detail"], c["gaps"], c["idle_ns"]) for c in causes] == [
        ("nvtx", "Data Loading", 2, 14_000_000), ("os-call", "pthread_cond_wait", 1, 7_000_000)]


def test_helper_thread_work_belongs_to_the_range_another_thread_is_in(tmp_path):
    # the main thread is inside "train_step" > "backward" while a helper thread (autograd's
    # backward thread, tid 101, no ranges of its own) launches kernels with host code between
    # them; between the steps no thread is in a range, so the gap there is untraced
    helper = GPID + 101
    nvtx, kernels, api, corr = [], [], [], 0
    for i in range(4):
        t = 20_000_000 * (i + 1)
        nvtx += [_push(t, t + 15_000_000, "train_step"), _push(t + 1_000_000, t + 14_000_000, "backward")]
        for j in range(3):  # 3 launches 4 ms apart, 1 ms kernels: 3 ms gaps of host code on the helper
            corr += 1
            launch = t + 2_000_000 + 4_000_000 * j
            api.append(_api(launch, launch + 10_000, corr, 2, tid=helper))
            kernels.append(_kernel(launch + 20_000, launch + 1_020_000, corr))
    given = {"strings": {1: "k", 2: "cudaLaunchKernel_v7000"}, "NVTX_EVENTS": nvtx,
             "CUPTI_ACTIVITY_KIND_KERNEL": kernels, "CUPTI_ACTIVITY_KIND_RUNTIME": api}
    trace = _trace(tmp_path, given)
    try:
        gaps = _rows(trace, "SELECT tid, cause, detail, nvtx_range, duration_ns FROM idle_gaps ORDER BY start_ns")
        ops = _rows(trace, "SELECT range_name, sum(ops) AS ops FROM nvtx_op_time GROUP BY ALL")
        stats = _rows(trace, "SELECT name, sum(ops) AS ops FROM nvtx_range_stats GROUP BY ALL ORDER BY name")
        budget = _rows(trace, "SELECT cause, place, sum(ns) AS ns FROM budget WHERE kind = 'idle' GROUP BY ALL")
    finally:
        trace.close()
    assert {g["tid"] for g in gaps} == {101}
    inside = [g for g in gaps if g["duration_ns"] < 4_000_000]
    between = [g for g in gaps if g["duration_ns"] >= 4_000_000]
    assert len(inside) == 8 and len(between) == 3
    assert {(g["cause"], g["detail"], g["nvtx_range"]) for g in inside} == {("nvtx", "backward", "backward")}
    # the helper's last kernel ends at +11.02 ms, the next step's first starts 20 ms later: no
    # thread is in a range from +15 ms to +20 ms, but the gap's middle (+15.5 ms) lies there
    assert {(g["cause"], g["nvtx_range"]) for g in between} == {("untraced", None)}
    # the helper's kernels are the step's work in the program's words; nsys's projection
    # (same thread only) stays as nsys counts it
    assert ops == [{"range_name": "backward", "ops": 9}]
    assert all(s["ops"] == 0 for s in stats)
    assert {(b["cause"], b["place"]) for b in budget} >= {("host code", "backward")}


@pytest.fixture(scope="module")
def h200_reports():
    from nsys_diagnose.analyze import analyze

    return {name: analyze(H200 / f"{name}.sqlite") for name in sorted(H200_STEPS) + ["multiproc"]}


def _warned(report) -> set[str]:
    return {f.rule_id for f in report.findings if f.severity != "info"}


@needs_shared
def test_h200_steady_state_verdicts(h200_reports):
    r = h200_reports
    # the bottleneck each README describes names the headline, with steady-state numbers
    assert r["dataloader_bound"].findings[0].rule_id == "input-pipeline-stall"
    assert "input pipeline stall" in r["dataloader_bound"].headline and "Data Loading" in r["dataloader_bound"].headline
    assert r["launch_bound"].findings[0].rule_id == "launch-bound-loop"
    # the launch calls are the same slice of the budget: one finding, the other its evidence
    top = r["launch_bound"].findings[0]
    assert "cuda-api-overhead" in {x.rule_id for x in top.related} and "launch-bound-loop" in _warned(r["launch_bound"])
    # graph replays: launch overhead gone from the steady state
    assert not {"launch-bound-loop", "cuda-api-overhead", "host-sync-in-loop"} & _warned(r["launch_graphs"])
    # the healthy control: no warning about its steady state; its start-up is information
    assert _warned(r["compute_bf16"]) == set()
    startup = [f for f in r["compute_bf16"].findings if f.rule_id == "gpu-idle-gaps"]
    assert [f.severity for f in startup] == ["info"] and "Start-up" in startup[0].message
    # the 5.9 s start-up gap of launch_bound is start-up, not a steady-state verdict
    gaps = [f for f in r["launch_bound"].findings if f.rule_id == "gpu-idle-gaps"]
    assert [f.severity for f in gaps] == ["info"]
    # no per-step sync in any of these programs (launch_bound reads the loss every 10th step only)
    assert not any("host-sync-in-loop" in _warned(x) for x in r.values())
    # pageable copies keep the GPU busy during transfer_pageable's "Data Loading": no stall there
    assert "input-pipeline-stall" not in _warned(r["transfer_pageable"])
    # two processes on one GPU: one start-up report each
    pids = {f.evidence["pid"] for f in r["multiproc"].findings if f.rule_id == "gpu-idle-gaps"}
    assert len(pids) == 2


@pytest.mark.parametrize("setup", ["one long operation", "many tiny kernels"])
def test_without_steps_the_window_starts_after_loading_before_half_the_work(tmp_path, setup):
    """No steps (no NVTX, every kernel named once): the steady state starts after the last module
    load before half the process's GPU work, counted both in time and in operations, so set-up
    that holds most of one (a long upload, thousands of tiny init kernels) is left out either way."""
    # strings: 1 cudaLaunchKernel, 2 cuLibraryLoadData (a driver call), 10+ kernels, one name each
    kernels, api, corr, name = [], [], 0, 10
    ms = 1_000_000

    def launch(start, end):
        nonlocal corr, name
        corr, name = corr + 1, name + 1
        api.append(_api(start - 20_000, start - 10_000, corr, 1))
        kernels.append(_kernel(start, end, corr, name_id=name))

    if setup == "one long operation":  # 100 ms at once, then a loop of 40 kernels of 1 ms
        launch(1 * ms, 101 * ms)
        loop = [(200 * ms + 5 * ms * i, 201 * ms + 5 * ms * i) for i in range(40)]
    else:  # 400 kernels of 1 us, then a loop of 4 kernels of 50 ms
        for i in range(400):
            launch(1 * ms + 10_000 * i, 1 * ms + 10_000 * i + 1_000)
        loop = [(200 * ms + 60 * ms * i, 250 * ms + 60 * ms * i) for i in range(4)]
    load_end = 150 * ms
    api.append({**_api(140 * ms, load_end, None, 2), "eventClass": 1})
    for start, end in loop:
        launch(start, end)
    strings = {1: "cudaLaunchKernel_v7000", 2: "cuLibraryLoadData", **{i: f"k{i}" for i in range(11, name + 1)}}
    trace = _trace(tmp_path, {"strings": strings, "CUPTI_ACTIVITY_KIND_KERNEL": kernels,
                              "CUPTI_ACTIVITY_KIND_RUNTIME": api})
    try:
        [window] = _rows(trace, "SELECT start_ns, method FROM steady_state")
    finally:
        trace.close()
    assert (window["start_ns"], window["method"]) == (load_end, "after-module-loading")
