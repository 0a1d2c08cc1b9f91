"""Multi-GPU communication (analyzer/ingest/sql/comm.sql, rules/comm/): NCCL kernels, exposed versus
overlapped communication per device, per-collective statistics and rank skew.

Every number the rules report is recomputed here independently, in Python, from the rows of the
normalized `kernels` table (interval unions by a plain sweep, k-th instance matching by sorting).
The public 2-GPU export (2x H100, PyTorch, NCCL initialised) has no NCCL kernel in its 1 s
window, which is itself a case to pin: the rules must stay quiet on it. To pin non-trivial values
on its real timelines too, a copy made at test time (never stored) relabels two kernel families
that run in lockstep on both GPUs as NCCL kernels; nsys's own kernel summary of the original file
(golden-nsys2022.4) then gives the expected collective counts and times.
"""

from __future__ import annotations

import csv
import random
import re
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest
import yaml
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.ingest.database import open_trace

from .conftest import FIXTURES, H200, PUBLIC, h200_names, needs_shared, scenario_file
from .synth import expand, union, write_export

RULES = load_rules()
COMM_RULES = ["comm-share", "comm-exposed", "comm-collectives", "comm-rank-skew"]
TWO_GPU = PUBLIC / "GindaChen+nsys-ai__h100_2gpu_1s.sqlite"
GOLDEN_KERNSUM = PUBLIC / "golden-nsys2022.4" / "GindaChen+nsys-ai__h100_2gpu_1s_gpukernsum.csv"
needs_two_gpu = needs_shared  # the 2-GPU export is one of ../shared/exports/public

# kernel short name in the original export -> NCCL kernel name it gets in the relabeled copy
RELABEL = {"reduce_kernel": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
           "vectorized_gather_kernel": "ncclDevKernel_AllGather_RING_LL"}
NCCL_FN = re.compile(r"^nccl[A-Za-z0-9]*Kernel")


# ---------------------------------------------------------------- independent reference code

def function_name(name: str, short_name: str | None) -> str:
    fn = (short_name or name).removeprefix("void ")
    return re.split(r"[(<]", fn, maxsplit=1)[0]


def overlap_ns(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Length of the intersection of two disjoint, sorted interval lists (two-pointer sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def kernel_rows(trace) -> list[dict]:
    cur = trace.con.execute("SELECT device_id, pid, start_ns, end_ns, name, short_name, launch_api FROM kernels")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def reference_exposure(rows: list[dict]) -> dict[tuple[int, int], dict]:
    """Per (device, pid) with NCCL kernels: comm union, overlap with the device's other kernels."""
    comm: dict[tuple[int, int], list] = {}
    compute: dict[int, list] = {}
    for r in rows:
        if NCCL_FN.match(function_name(r["name"], r["short_name"])):
            comm.setdefault((r["device_id"], r["pid"]), []).append((r["start_ns"], r["end_ns"]))
        else:
            compute.setdefault(r["device_id"], []).append((r["start_ns"], r["end_ns"]))
    out = {}
    for (dev, pid), iv in comm.items():
        cu, ku = union(iv), union(compute.get(dev, []))
        comm_ns = sum(e - s for s, e in cu)
        ov = overlap_ns(cu, ku)
        out[(dev, pid)] = {"comm_kernels": len(iv), "comm_ns": comm_ns, "overlapped_ns": ov,
                           "exposed_ns": comm_ns - ov}
    return out


def rule_rows(path: Path, rule_id: str, **params) -> tuple[str, list[dict], list]:
    report = analyze(path, rules=RULES, select=[rule_id], overrides={rule_id: params} if params else None)
    result = report.rules[0]
    return result.status, result.rows, result.findings


def relabeled_copy(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    try:
        next_id = con.execute("SELECT max(id) FROM StringIds").fetchone()[0] + 1
        for i, (old, new) in enumerate(RELABEL.items()):
            con.execute("INSERT INTO StringIds VALUES (?, ?)", (next_id + i, new))
            con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = ?, demangledName = ? "
                        "WHERE shortName IN (SELECT id FROM StringIds WHERE value = ?)", (next_id + i, next_id + i, old))
        con.commit()
    finally:
        con.close()
    return dst


# ---------------------------------------------------------------- the public 2-GPU export as is

@pytest.fixture(scope="module")
def two_gpu():
    trace = open_trace(TWO_GPU)
    yield trace
    trace.close()


@needs_two_gpu
def test_two_gpu_window_has_no_nccl_kernel_and_the_rules_stay_quiet(two_gpu):
    rows = kernel_rows(two_gpu)
    assert {r["device_id"] for r in rows} == {0, 1}
    assert not [r for r in rows if NCCL_FN.match(function_name(r["name"], r["short_name"]))]
    with GOLDEN_KERNSUM.open() as f:  # nsys's own kernel summary agrees: no NCCL kernel at all
        assert not [r for r in csv.DictReader(f) if "nccl" in r["Name"].lower()]
    assert two_gpu.con.execute("SELECT count(*) FROM comm_kernels").fetchone()[0] == 0
    for rule_id in COMM_RULES:
        status, result_rows, findings = rule_rows(TWO_GPU, rule_id)
        assert (status, result_rows, findings) == ("passed", [], []), rule_id


# ---------------------------------------------------------------- relabeled copy: real timelines

@pytest.fixture(scope="module")
def relabeled(tmp_path_factory):  # (its tests are needs_two_gpu)
    path = relabeled_copy(TWO_GPU, tmp_path_factory.mktemp("comm") / "h100_2gpu_relabeled.sqlite")
    trace = open_trace(path)
    yield path, trace, kernel_rows(trace)
    trace.close()


def golden_family(prefix: str) -> tuple[int, int]:
    """(instances, total ns) of a kernel family in nsys 2022.4's gpukernsum of the original file."""
    with GOLDEN_KERNSUM.open() as f:
        rows = [r for r in csv.DictReader(f) if r["Name"].startswith(prefix)]
    return sum(int(r["Instances"]) for r in rows), sum(int(r["Total Time (ns)"]) for r in rows)


@needs_two_gpu
def test_relabeled_timelines_count_kernels_without_launch_rows(relabeled):
    _, trace, rows = relabeled
    assert sum(r["launch_api"] is None for r in rows) > len(rows) / 3  # the derived window's dangling half
    dangling = trace.con.execute("SELECT count(*) FROM comm_kernels WHERE launch_tid IS NULL").fetchone()[0]
    assert dangling > 0
    got = dict(trace.con.execute("SELECT device_id, sum(duration_ns) FROM comm_compute_busy GROUP BY 1").fetchall())
    for dev in (0, 1):
        compute = [(r["start_ns"], r["end_ns"]) for r in rows if r["device_id"] == dev
                   and not NCCL_FN.match(function_name(r["name"], r["short_name"]))]
        assert got[dev] == sum(e - s for s, e in union(compute))
    comm = trace.con.execute("SELECT sum(comm_ns) FROM comm_exposure").fetchone()[0]
    with GOLDEN_KERNSUM.open() as f:  # one stream per GPU: compute + comm is every kernel's time, as nsys sums it
        assert sum(got.values()) + comm == sum(int(r["Total Time (ns)"]) for r in csv.DictReader(f))


@needs_two_gpu
def test_relabeled_exposed_share_per_device(relabeled):
    path, _, rows = relabeled
    want = reference_exposure(rows)
    assert set(want) == {(0, 111), (1, 112)}
    status, got, findings = rule_rows(path, "comm-exposed")
    assert status == "passed" and not findings  # 0.1 % of the window: nothing at stake
    by_rank = {(r["device_id"], r["pid"]): r for r in got}
    assert set(by_rank) == set(want)
    for rank, ref in want.items():
        row = by_rank[rank]
        assert {k: row[k] for k in ref} == ref
        assert row["exposed_share_pct"] == pytest.approx(100.0 * ref["exposed_ns"] / ref["comm_ns"], abs=0.01)
    # the relabeled kernels share the only stream with the compute: nothing can overlap them
    assert all(r["overlapped_ns"] == 0 and r["steady_overlapped_ns"] == 0 for r in got)
    # the steady-state part: the comm union clipped to the process's steady window
    _, trace, _ = relabeled
    windows = {pid: (s, e) for pid, s, e in trace.con.execute("SELECT pid, start_ns, end_ns FROM steady_state").fetchall()}
    for (dev, pid), row in by_rank.items():
        lo, hi = windows[pid]
        comm = union([(r["start_ns"], r["end_ns"]) for r in rows if r["device_id"] == dev
                      and NCCL_FN.match(function_name(r["name"], r["short_name"]))])
        steady = sum(max(0, min(e, hi) - max(s, lo)) for s, e in comm)
        assert (row["steady_comm_ns"], row["steady_exposed_ns"], row["window_ns"]) == (steady, steady, hi - lo)


@needs_two_gpu
def test_relabeled_collective_table(relabeled):
    path, _, rows = relabeled
    status, got, _ = rule_rows(path, "comm-collectives")
    assert status == "fired"  # AllReduce f32 dominates (info) and runs in fp32 (info)
    table = {(r["collective"], r["dtype"]): r for r in got}
    assert set(table) == {("AllReduce", "f32"), ("AllGather", None)}
    families = {("AllReduce", "f32"): "void at::native::reduce_kernel<",
                ("AllGather", None): "void at::native::vectorized_gather_kernel<"}
    all_ns = sum(r["end_ns"] - r["start_ns"] for r in rows
                 if NCCL_FN.match(function_name(r["name"], r["short_name"])))
    for key, prefix in families.items():
        new_name = RELABEL["reduce_kernel" if key[0] == "AllReduce" else "vectorized_gather_kernel"]
        durations = [r["end_ns"] - r["start_ns"] for r in rows if r["short_name"] == new_name]
        row = table[key]
        assert (row["instances"], row["total_ns"]) == golden_family(prefix)
        assert (row["ranks"], row["instances_per_rank"]) == (2, len(durations) / 2)
        assert (row["min_ns"], row["max_ns"]) == (min(durations), max(durations))
        assert row["median_ns"] == pytest.approx(statistics.median(durations), abs=0.5)
        assert row["share_pct"] == pytest.approx(100.0 * sum(durations) / all_ns, abs=0.01)


@needs_two_gpu
def test_relabeled_rank_skew(relabeled):
    path, trace, rows = relabeled
    # the two ranks run the same program: instance k on GPU 0 is instance k on GPU 1 (no shift)
    assert trace.con.execute("SELECT count(*) FROM comm_instances WHERE instance <> seq").fetchone()[0] == 0
    # the verdict counts the instances inside each rank's steady state (20_phases.sql decides it;
    # here it is an input), where both ranks' kernels must start for the instance to count
    windows = {pid: (s, e) for pid, s, e in trace.con.execute("SELECT pid, start_ns, end_ns FROM steady_state").fetchall()}
    pid_of = {0: 111, 1: 112}
    starts: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        if r["short_name"] in RELABEL.values():
            starts.setdefault((r["short_name"], r["device_id"]), []).append(r["start_ns"])
    ref = {dev: {"instances": 0, "times_last": 0, "late": [], "skew_when_last": 0} for dev in (0, 1)}
    for name in RELABEL.values():
        for s0, s1 in zip(sorted(starts[(name, 0)]), sorted(starts[(name, 1)]), strict=True):
            if not all(windows[pid_of[d]][0] <= s <= windows[pid_of[d]][1] for d, s in ((0, s0), (1, s1))):
                continue
            first, last = min(s0, s1), max(s0, s1)
            for dev, s in ((0, s0), (1, s1)):
                ref[dev]["instances"] += 1
                ref[dev]["late"].append(s - first)
                if s == last and last > first:
                    ref[dev]["times_last"] += 1
                    ref[dev]["skew_when_last"] += last - first
    status, got, findings = rule_rows(path, "comm-rank-skew")
    by_dev = {r["device_id"]: r for r in got}
    for dev, want in ref.items():
        row = by_dev[dev]
        assert (row["instances"], row["times_last"], row["skew_when_last_ns"]) == (
            want["instances"], want["times_last"], want["skew_when_last"])
        assert row["mean_late_ns"] == pytest.approx(statistics.mean(want["late"]), abs=1)
        assert row["max_late_ns"] == max(want["late"])
    # the rank the reference finds last most often is the straggler by rank order; in this
    # window's steady state (its last ~60 ms) it trails at every instance, by ~0.1 ms ...
    late = max(ref, key=lambda d: (ref[d]["times_last"], ref[d]["skew_when_last"]))
    assert ref[late]["instances"] >= 5 and ref[late]["times_last"] == ref[late]["instances"]
    assert (by_dev[late]["straggler_rank"], by_dev[late]["pid"]) == (1, pid_of[late])
    # ... but the other rank waits for it less than 2 % of the steady window: no finding by default
    assert by_dev[late]["skew_window_pct"] < 2.0
    assert status == "passed" and not findings
    # ... until that threshold is lowered: then it is named
    status, _, findings = rule_rows(path, "comm-rank-skew", min_window_pct=0.5)
    assert status == "fired" and len(findings) == 1
    assert findings[0].message.startswith(f"GPU {late} (pid {pid_of[late]}) is the straggler")


# ---------------------------------------------------------------- synthetic traces

def test_straggler_named_on_fixture(tmp_path):
    spec = yaml.safe_load(scenario_file("comm-rank-skew/fires-slow-input-on-rank-1").read_text())
    export = write_export(expand(spec["given"]), tmp_path / "straggler.sqlite")
    report = analyze(export, rules=RULES, select=COMM_RULES, use_cache=False)
    skew = [f for f in report.findings if f.rule_id == "comm-rank-skew"]
    assert len(skew) == 1
    # 30 steps, the first one start-up: 29 steady-state all-reduces, each waiting 0.8 ms for rank 1
    assert skew[0].message.startswith("GPU 1 (pid 101) is the straggler: it arrives last at 29 of 29")
    assert skew[0].impact_ns == 29 * 800_000


NAMES = {  # kernel function name -> (collective, dtype), across NCCL generations
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": ("AllReduce", "bf16"),
    "ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL": ("ReduceScatter", "f8e4m3"),
    "ncclDevKernel_AllGather_RING_LL": ("AllGather", None),
    "ncclDevKernel_SendRecv": ("SendRecv", None),
    "ncclDevKernel_Generic_4": ("Generic", None),
    "ncclKernel_AllReduce_RING_LL_Sum_float": ("AllReduce", "f32"),
    "ncclKernel_ReduceScatter_RING_SIMPLE_Sum___nv_bfloat16": ("ReduceScatter", "bf16"),
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t": ("SendRecv", None),
    "ncclAllReduceRingLLKernel_sum_f16": ("AllReduce", "f16"),
    "ncclBroadcastRingLLKernel_copy_i8": ("Broadcast", None),
    "ncclReduceTreeLL128Kernel_sum_u64": ("Reduce", "u64"),
    "ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_bf16": ("AllReduce", "bf16"),
    "ncclSymkDevKernel_AllGather_LL": ("AllGather", None),
}
NOT_NCCL = ["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, T3)",
            "nccl_user_helper", "my_ncclKernel_copy", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"]


def test_kernel_names_of_every_nccl_generation(tmp_path):
    names = list(NAMES) + NOT_NCCL
    strings = {i + 1: n for i, n in enumerate(names)}
    strings[len(names) + 1] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    gpid = 2**48 + 100 * 2**24
    kernels = [{"start": 1000 * (i + 1), "end": 1000 * (i + 1) + 500, "deviceId": 0, "streamId": 7,
                "correlationId": i + 1, "globalPid": gpid, "demangledName": i + 1, "shortName": i + 1}
               for i in range(len(names))]
    # a demangled name with its parameter list and no short name (old exports)
    kernels.append({"start": 90000, "end": 90500, "deviceId": 0, "streamId": 7, "correlationId": 99,
                    "globalPid": gpid, "demangledName": len(names) + 1})
    trace = open_trace(write_export(expand({"strings": strings, "CUPTI_ACTIVITY_KIND_KERNEL": kernels}),
                                    tmp_path / "names.sqlite"), use_cache=False)
    try:
        got = {function_name(n, None): (c, d) for n, c, d in
               trace.con.execute("SELECT name, collective, dtype FROM comm_kernels").fetchall()}
        kinds = trace.con.execute("SELECT DISTINCT recognised_by FROM comm_kernels").fetchall()
    finally:
        trace.close()
    assert got == NAMES  # the demangled one folds into its short-name twin; NOT_NCCL are absent
    assert kinds == [("name",)]


def random_trace(rng: random.Random, n: int) -> tuple[dict, dict]:
    """2 ranks, kernels on two compute streams and two NCCL streams, overlapping at random."""
    strings = {1: "ampere_sgemm_128x64_nn", 2: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
               3: "ncclDevKernel_AllGather_RING_LL"}
    kernels = []
    for dev, pid in ((0, 100), (1, 101)):
        for i in range(n):
            start = rng.randrange(1_000, 10_000_000)
            kernels.append({"start": start, "end": start + rng.randrange(0, 400_000), "deviceId": dev,
                            "streamId": rng.choice((7, 8, 20, 21)), "correlationId": i + 1,
                            "globalPid": 2**48 + pid * 2**24, "demangledName": rng.choice((1, 1, 2, 3))})
            kernels[-1]["shortName"] = kernels[-1]["demangledName"]
    return strings, {"CUPTI_ACTIVITY_KIND_KERNEL": kernels}


@pytest.mark.parametrize("seed", [1, 2])
def test_exposure_matches_a_python_sweep_on_random_overlaps(tmp_path, seed):
    strings, tables = random_trace(random.Random(seed), 150)
    export = write_export(expand({"strings": strings, **tables}), tmp_path / "random.sqlite")
    trace = open_trace(export, use_cache=False)
    try:
        want = reference_exposure(kernel_rows(trace))
        cur = trace.con.execute("SELECT device_id, pid, comm_kernels, comm_ns, overlapped_ns, exposed_ns FROM comm_exposure")
        got = {(r[0], r[1]): dict(zip(("comm_kernels", "comm_ns", "overlapped_ns", "exposed_ns"), r[2:]))
               for r in cur.fetchall()}
    finally:
        trace.close()
    assert got == want
    assert all(0 < v["overlapped_ns"] < v["comm_ns"] for v in got.values())  # both parts exercised


# ---------------------------------------------------------------- single-GPU exports

@needs_shared
@pytest.mark.parametrize("name", h200_names())
def test_single_gpu_exports_never_fire(name):
    report = analyze(H200 / f"{name}.sqlite", rules=RULES, select=COMM_RULES)
    for result in report.rules:
        assert result.status in ("passed", "skipped"), (result.id, result.reason)
        assert not result.findings and not result.rows, result.id


@pytest.mark.parametrize("export", sorted((FIXTURES / "exports").glob("*.sqlite")), ids=lambda p: p.stem)
def test_fixture_exports_never_fire(export):
    report = analyze(export, rules=RULES, select=COMM_RULES)
    assert all(r.status in ("passed", "skipped") and not r.findings and not r.rows for r in report.rules)
