"""`nsys-diagnose compare`: the verdicts on the real H200 exports, synthetic runs for the cases
they lack (a regression, too few steps, a different GPU), the statistics, the CLI contract."""

from __future__ import annotations

import bisect
import itertools
import json
import math
import random
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from nsys_diagnose.cli import main
from nsys_diagnose.compare import VERDICTS, compare
from nsys_diagnose.compare.distribution import describe, quantile
from nsys_diagnose.compare.render import render_markdown
from nsys_diagnose.compare.stats import (
    _exact_u_cdf,
    block_length,
    block_resample,
    mann_whitney,
    mean_change_ci,
    median_change_ci,
)
from nsys_diagnose.engine.catalog import load_rules

from .conftest import FIXTURES, H200, ROOT, h200_names, needs_shared
from .synth import write_export

RULES = load_rules()


def run_cli(*args) -> subprocess.CompletedProcess:
    """As a user runs it: a real process."""
    return subprocess.run([sys.executable, "-m", "nsys_diagnose", "compare", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def cli(capsys, *args) -> tuple[int, str, str]:
    """The same entry point in this process (no interpreter start-up): (exit code, stdout, stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sys, "argv", ["nsys-diagnose", "compare", *map(str, args)])
            main()
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


# ---- synthetic training runs ------------------------------------------------------------------

PID = 100
GPID = (1 << 48) + PID * (1 << 24)
GTID = GPID + PID


def training_run(path: Path, step_ns: list[int], *, gpu: str = "NVIDIA H200", kernel: str = "gemm_kernel",
                 step_name: str = "train_step", busy_share: float = 0.8, host_step_ns: int | None = None,
                 idle_steps: frozenset[int] = frozenset()) -> Path:
    """A loop of NVTX `step_name` ranges, one launch + one kernel per step (the kernel runs for
    `busy_share` of the step), on one GPU, with the capture metadata a real export carries.
    With `host_step_ns` the host runs ahead: its steps last that long, and the kernels, each
    `step_ns` long, queue up on one stream. Steps in `idle_steps` (0-based) launch nothing."""
    strings = {1: step_name, 2: kernel, 3: "cudaLaunchKernel_v7000"}
    nvtx, api, kern = [], [], []
    t = 1_000_000_000
    gpu_free = 0
    for i, dur in enumerate(step_ns):
        host = dur if host_step_ns is None else host_step_ns
        nvtx.append({"start": t, "end": t + host, "eventType": 59, "textId": 1, "globalTid": GTID,
                     "endGlobalTid": None, "domainId": 0})
        if i in idle_steps:
            t += host
            continue
        api.append({"start": t + 1_000, "end": t + 6_000, "eventClass": 0, "globalTid": GTID,
                    "correlationId": i + 1, "nameId": 3, "returnValue": 0})
        k_start = max(t + 10_000, gpu_free)
        k_end = k_start + (int(dur * busy_share) if host_step_ns is None else dur)
        gpu_free = k_end
        kern.append({"start": k_start, "end": k_end, "deviceId": 0, "contextId": 1,
                     "streamId": 7, "correlationId": i + 1, "globalPid": GPID, "demangledName": 2, "shortName": 2,
                     "gridX": 1024, "gridY": 1, "gridZ": 1, "blockX": 256, "blockY": 1, "blockZ": 1})
        t += host
    tables = {
        "StringIds": [{"id": k, "value": v} for k, v in strings.items()],
        "NVTX_EVENTS": nvtx, "CUPTI_ACTIVITY_KIND_RUNTIME": api, "CUPTI_ACTIVITY_KIND_KERNEL": kern,
        "TARGET_INFO_GPU": [{"id": 0, "name": gpu, "smCount": 132, "totalMemory": 150_000_000_000,
                             "computeMajor": 9, "computeMinor": 0}],
        "META_DATA_CAPTURE": [{"name": "CAPTURE_EVENT_TYPE", "value": v} for v in ("Cuda", "NvtxEvents")]
        + [{"name": "PROCESS_0:COMMAND", "value": "python3"}, {"name": "PROCESS_0:ARGUMENT_0", "value": "train.py"}],
        "TARGET_INFO_SYSTEM_ENV": [{"name": "NvDriverVersion", "value": "580.159.04"},
                                   {"name": "CudaDriverVersion", "value": "13000"}],
        "EXPORT_META_DATA": [{"name": "EXPORT_PRODUCT_VERSION", "value": "2025.3.2.0"}],
        "PROCESSES": [{"globalPid": GPID, "pid": PID, "name": "python3"}],
    }
    return write_export(tables, path)


def jittered(n: int, mean_ns: int, rel: float, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [int(mean_ns * (1 + rng.uniform(-rel, rel))) for _ in range(n)]


def bursty(n: int, seed: int) -> list[int]:
    """Loader workers that only partly keep up: five steps find a batch ready (~5 ms), the
    sixth waits ~400 ms for the next burst. Mean ~71 ms, median ~5 ms."""
    rng = random.Random(seed)
    return [int((400e6 if i % 6 == 5 else 5e6) * (1 + rng.uniform(-0.1, 0.1))) for i in range(n)]


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("compare-synth")
    return {
        "base": training_run(d / "base.sqlite", jittered(30, 10_000_000, 0.05, seed=1)),
        "rerun": training_run(d / "rerun.sqlite", jittered(30, 10_000_000, 0.05, seed=2)),
        "slower": training_run(d / "slower.sqlite", jittered(30, 12_000_000, 0.05, seed=3)),
        "slightly": training_run(d / "slightly.sqlite", jittered(30, 10_050_000, 0.05, seed=4)),
        "few_a": training_run(d / "few_a.sqlite", jittered(4, 10_000_000, 0.05, seed=5)),
        "few_b": training_run(d / "few_b.sqlite", jittered(4, 20_000_000, 0.05, seed=6)),
        "other_gpu": training_run(d / "other_gpu.sqlite", jittered(30, 10_000_000, 0.05, seed=7), gpu="NVIDIA A100"),
        "other_prog": training_run(d / "other_prog.sqlite", jittered(30, 10_000_000, 0.05, seed=8),
                                   kernel="conv_kernel", step_name="render_frame"),
        "no_steps": training_run(d / "no_steps.sqlite", [50_000_000]),
        "steady_100": training_run(d / "steady_100.sqlite", jittered(38, 100_000_000, 0.05, seed=9)),
        "bursty": training_run(d / "bursty.sqlite", bursty(38, seed=10)),
        "idle_step": training_run(d / "idle_step.sqlite", jittered(30, 12_000_000, 0.05, seed=13),
                                  idle_steps=frozenset({10})),
        "queued": training_run(d / "queued.sqlite", jittered(30, 10_000_000, 0.02, seed=11), host_step_ns=100_000),
        "queued_slower": training_run(d / "queued_slower.sqlite", jittered(30, 12_000_000, 0.02, seed=12),
                                      host_step_ns=100_000),
    }


def cmp(a: Path, b: Path, **kw):
    return compare(a, b, rules=RULES, **kw)


def test_synthetic_regression_is_called_with_its_size(synth):
    c = cmp(synth["base"], synth["slower"])
    assert c.verdict == "regressed", c.summary
    e = c.effect
    assert 15 < e.change_pct < 25 and e.ci_low_pct > 0 and e.p_value < 0.001
    assert e.before_steps == e.after_steps == 28  # 30 steps: the first (start-up) and last are not timed
    assert c.regression_beyond(10) and not c.regression_beyond(30)
    kernel = next(d for d in c.items if d.name == "gemm_kernel")
    assert kernel.status == "slower" and kernel.p_value < 0.001
    assert c.drivers and c.drivers[0].name == "gemm_kernel"


def test_synthetic_rerun_is_no_change(synth):
    c = cmp(synth["base"], synth["rerun"])
    assert c.verdict == "no-change", c.summary
    assert c.effect.ci_low_pct < 0 < c.effect.ci_high_pct


def test_change_inside_the_noise_is_not_called(synth):
    c = cmp(synth["base"], synth["slightly"])  # +0.5 % mean shift under +-5 % jitter
    assert c.verdict == "no-change", c.summary


def test_too_few_steps_is_inconclusive(synth):
    c = cmp(synth["few_a"], synth["few_b"])  # twice as slow, but 2 timed steps a side
    assert c.verdict == "inconclusive"
    assert "too few steps" in c.summary and "2 timed steps before" in c.summary


def test_no_steps_is_inconclusive(synth):
    c = cmp(synth["no_steps"], synth["no_steps"])
    assert c.verdict == "inconclusive" and "no repeating steps" in c.summary
    assert c.scope == "per run"


def test_different_gpu_is_not_comparable(synth):
    c = cmp(synth["base"], synth["other_gpu"])
    assert c.verdict == "not-comparable"
    assert [x.id for x in c.preflight.blockers] == ["gpu"] and "NVIDIA A100" in c.summary
    forced = cmp(synth["base"], synth["other_gpu"], settings=type(c.settings)(assume_comparable=True))
    assert forced.verdict == "no-change" and any("--assume-comparable" in n for n in forced.notes)


def test_different_program_is_not_comparable(synth):
    c = cmp(synth["base"], synth["other_prog"])
    assert c.verdict == "not-comparable"
    assert [x.id for x in c.preflight.blockers] == ["program"]
    assert c.items == [] and c.processes == []


def test_bursty_steps_are_judged_by_the_mean_not_the_median(synth):
    """The issue's case: with workers, most steps find a batch ready and every few steps one
    waits. The median step shrinks ~95 %, the run gets ~30 % faster: the verdict and its
    figure are the latter."""
    c = cmp(synth["steady_100"], synth["bursty"])
    periods = bursty(38, seed=10)[1:-1]  # timed: all but the first (start-up) and the last step
    before = jittered(38, 100_000_000, 0.05, seed=9)[1:-1]
    truth = (sum(periods) / len(periods)) / (sum(before) / len(before)) * 100 - 100
    e = c.effect
    assert c.verdict == "improved", c.summary
    assert e.metric == "mean_step_period_ns" and e.timeline == "gpu"
    assert e.change_pct == pytest.approx(truth, abs=0.5) and -35 < e.change_pct < -25
    assert e.ci_low_pct < e.change_pct < e.ci_high_pct < 0
    assert e.median_change_pct < -90  # the secondary figure, and why it is not the verdict's
    d = e.after_distribution
    assert d.long_steps == 6 and d.long_share_pct > 90 and d.p50_ns < 6e6 and d.max_ns > 400e6 * 0.9
    assert d.note.startswith("6 of 36 steps take 9") and e.before_distribution.note is None
    assert "AFTER: 6 of 36 steps take" in c.summary and "mean step time 99.6 ms -> 72 ms (-27.7 %" in c.summary
    md = render_markdown(c)
    assert "| 100 | after | 36 | 72 ms | 4.65 ms | 5.11 ms | 393 ms | 436 ms | 6, 94 % of the time |" in md
    assert "- AFTER (pid 100): 6 of 36 steps take 94 % of the time" in md


def test_host_running_ahead_is_timed_on_the_gpu(synth):
    """The host queues every step in 100 us; the GPU takes 10 ms, then 12 ms, per step. The
    host's step starts do not move at all: only the GPU's timeline sees the regression."""
    c = cmp(synth["queued"], synth["queued_slower"])
    e = c.effect
    assert c.verdict == "regressed", c.summary
    assert e.timeline == "gpu" and 18 < e.change_pct < 22
    assert e.before_host_mean_ns == pytest.approx(100_000) and e.after_host_mean_ns == pytest.approx(100_000)
    assert e.before_mean_ns == pytest.approx(10e6, rel=0.02) and e.after_mean_ns == pytest.approx(12e6, rel=0.02)
    assert any("the host runs ahead of the GPU" in n for n in c.notes)


# ---- the real H200 exports --------------------------------------------------------------------

@pytest.fixture(scope="module")
def h200():
    cache = {}

    def get(a: str, b: str):
        if (a, b) not in cache:
            cache[(a, b)] = cmp(_export(a), _export(b))
        return cache[(a, b)]
    return get


def test_steps_without_gpu_work_are_timed_on_the_host(synth):
    c = cmp(synth["base"], synth["idle_step"])  # step 11 of AFTER launches nothing: no GPU start to time it by
    e = c.effect
    assert c.verdict == "regressed" and e.timeline == "gpu / host" and 15 < e.change_pct < 25, c.summary
    assert e.after_mean_ns == pytest.approx(e.after_host_mean_ns)
    assert any(n.startswith("AFTER (pid 100): a step launched no GPU work") for n in c.notes)


# ---- the true change, from the trace itself ---------------------------------------------------
# Plain SQL on the nsys export, nothing of the analyzer's: the step ranges from NVTX_EVENTS, and
# each step's GPU work joined to the launch calls made during it through their correlation ids.

STEP_RANGE = {"launch": "train_step", "compute": "Model Computation", "dataloader": "Data Loading",
              "dataloader_workers_bursty": "train_step"}  # its "Data Loading" is inside a "train_step"
BURSTY = FIXTURES / "exports" / "dataloader_workers_bursty.sqlite"
_GPU = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
_API = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")


def true_mean_periods(path: Path) -> tuple[float, float]:
    """(mean period between host step starts, mean period between the steps' first GPU
    operations), in ns, over the steps the README says are timed: all but the first (start-up)
    and the last (no step follows it)."""
    step = STEP_RANGE.get(path.stem) or STEP_RANGE[path.stem.split("_")[0]]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    starts = [r[0] for r in con.execute(
        "SELECT n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE coalesce(n.text, s.value) = ? AND n.eventType IN (59, 60) ORDER BY n.start", (step,))]
    gpu = " UNION ALL ".join(f"SELECT start, correlationId, globalPid >> 24 AS pid FROM {t}" for t in _GPU
                             if t in tables)
    api = " UNION ALL ".join(f"SELECT start, correlationId, globalTid >> 24 AS pid FROM {t}" for t in _API
                             if t in tables)
    # the earliest GPU start of the work launched in each step [start_k, start_k+1)
    first: dict[int, int] = {}
    for launched, ran in con.execute(f"SELECT a.start, g.start FROM ({gpu}) g JOIN ({api}) a "
                                     "ON a.correlationId = g.correlationId AND a.pid = g.pid"):
        k = bisect.bisect_right(starts, launched) - 1
        if k >= 0:
            first[k] = min(ran, first.get(k, ran))
    con.close()
    n = len(starts) - 2  # periods from step 2's start to the last step's
    return (starts[-1] - starts[1]) / n, (first[len(starts) - 1] - first[1]) / n


PAIRS = [("launch_bound", "launch_graphs", "improved"), ("compute_fp32", "compute_bf16", "improved"),
         ("launch_bound", "launch_bound", "no-change"), ("compute_fp32", "compute_fp32", "no-change"),
         ("dataloader_bound", "dataloader_bound", "no-change")]


def _export(name: str) -> Path:
    return BURSTY if name == BURSTY.stem else H200 / f"{name}.sqlite"


@needs_shared
@pytest.mark.parametrize("before,after,verdict", PAIRS + [("dataloader_bound", BURSTY.stem, None)],
                         ids=lambda x: x or "")
def test_reported_change_is_the_true_mean_period_change(h200, before, after, verdict):
    if not _export(after).exists():
        pytest.skip(f"{_export(after)} not captured yet")
    host_a, gpu_a = true_mean_periods(_export(before))
    host_b, gpu_b = true_mean_periods(_export(after))
    c = h200(before, after)
    e = c.effect
    assert verdict is None or c.verdict == verdict, c.summary
    assert e.metric == "mean_step_period_ns" and e.timeline == "gpu"
    assert e.before_mean_ns == pytest.approx(gpu_a, rel=1e-3) and e.after_mean_ns == pytest.approx(gpu_b, rel=1e-3)
    assert e.change_pct == pytest.approx((gpu_b / gpu_a - 1) * 100, abs=0.5)
    assert e.before_host_mean_ns == pytest.approx(host_a, rel=1e-3)
    assert e.after_host_mean_ns == pytest.approx(host_b, rel=1e-3)
    if not before.startswith("compute"):  # there the host queues every step in ~0.1 ms: its starts mean nothing
        assert e.change_pct == pytest.approx((host_b / host_a - 1) * 100, abs=5)
    assert e.ci_low_pct <= e.change_pct <= e.ci_high_pct


@needs_shared
def test_launch_graphs_improves_launch_bound_and_names_the_launch_api(h200):
    c = h200("launch_bound", "launch_graphs")
    assert c.verdict == "improved", c.summary
    assert c.preflight.comparable and not c.preflight.cautions
    assert c.effect.change_pct < -70 and c.effect.ci_high_pct < -70
    assert c.effect.before_steps == c.effect.after_steps == 28
    assert c.drivers[0].kind == "api" and c.drivers[0].name == "cudaLaunchKernel"
    assert c.drivers[0].status == "gone" and c.drivers[0].before_count > 1000  # ~1,000 launches per step
    assert any(d.kind == "graph" and d.status == "new" for d in c.offsets)
    assert "cudaLaunchKernel" in c.summary and "CUDA graph replays" in c.summary
    util = {m.id: m for m in c.steady}["step_utilization_pct"]
    assert util.before < 20 and util.after > 90
    assert "launch-bound-loop" in {f.rule_id for f in c.findings["resolved"]}
    # AFTER's replays hide their kernels: launch_bound's kernels are not "gone", and its kernel
    # findings are not "resolved", nor do hidden kernels count as drivers
    kernels = [d for d in c.items if d.kind == "kernel"]
    assert kernels and all(d.status == "hidden" for d in kernels if not d.after_count)
    assert not any(d.status == "gone" for d in kernels)
    assert not any(d.status == "hidden" for d in c.drivers + c.offsets)
    kernel_rules = {"fusion-candidates", "small-grids", "hot-kernels", "fp32-gemm"}
    assert not kernel_rules & {f.rule_id for f in c.findings["resolved"]}
    back = h200("launch_graphs", "launch_bound")
    assert not kernel_rules & {f.rule_id for f in back.findings["new"]}


@needs_shared
def test_bf16_improves_fp32_and_names_the_gemm_kernels(h200):
    c = h200("compute_fp32", "compute_bf16")
    assert c.verdict == "improved", c.summary
    assert c.effect.change_pct < -80 and c.effect.ci_high_pct < -80
    top = c.drivers[0]
    assert top.kind == "kernel" and top.status == "gone" and "f32f32" in top.name and "gemm" in top.name
    assert any(d.kind == "kernel" and d.status == "new" and "nvjet" in d.name for d in c.offsets)
    assert [x.id for x in c.preflight.cautions] == ["kernel-set"]  # a new kernel set, not a new program


@needs_shared
def test_dataloader_against_compute_is_not_comparable(h200):
    c = h200("dataloader_bound", "compute_fp32")
    assert c.verdict == "not-comparable"
    assert [x.id for x in c.preflight.blockers] == ["program"]
    assert c.summary.startswith("Not comparable: NVTX structure 33 % shared")


@needs_shared
@pytest.mark.parametrize("name", h200_names() or ["none"])
def test_every_export_against_itself_is_no_change(h200, name):
    c = h200(name, name)
    assert c.verdict == "no-change", c.summary
    assert all(p.change_pct == 0 and p.p_value == 1.0 for p in c.processes)
    assert all(d.status == "same" for d in c.items)
    assert not c.findings["new"] and not c.findings["resolved"]


@needs_shared
def test_reversed_fix_is_a_regression_gated_by_the_cli(capsys, tmp_path):
    out = tmp_path / "c.json"
    code, _, err = cli(capsys, H200 / "launch_graphs.sqlite", H200 / "launch_bound.sqlite", "--format", "json",
                       "-o", out, "--fail-on-regression", "50")
    assert code == 1, err
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "regressed" and doc["effect"]["change_pct"] > 50
    assert doc["drivers"][0]["name"] == "cudaLaunchKernel" and doc["drivers"][0]["status"] == "new"


# ---- CLI contract -----------------------------------------------------------------------------

def test_gate_exit_code_in_a_real_process(synth):
    r = run_cli(synth["base"], synth["slower"], "--fail-on-regression", "10")
    assert r.returncode == 1, r.stderr
    assert "**Regressed**" in r.stdout and "Regression gate (`--fail-on-regression 10`): **FAILED**" in r.stdout


def test_json_contract(synth, tmp_path, capsys):
    out = tmp_path / "c.json"
    code, _, err = cli(capsys, synth["base"], synth["slower"], "--format", "json", "-o", out)
    assert code == 0, err  # no gate asked for
    doc = json.loads(out.read_text())
    assert doc["verdict"] in VERDICTS and doc["verdict"] == "regressed"
    assert {"schema_version", "summary", "effect", "preflight", "metrics", "kernels", "apis", "nvtx",
            "findings", "processes"} <= set(doc)
    assert doc["schema_version"] == 4
    effect_keys = {"metric", "timeline", "before_mean_ns", "after_mean_ns", "change_pct", "ci_low_pct", "ci_high_pct",
                   "throughput_ratio", "before_median_ns", "after_median_ns", "median_change_pct", "p_value",
                   "before_distribution", "after_distribution"}
    assert effect_keys <= set(doc["effect"])
    assert doc["effect"]["metric"] == "mean_step_period_ns" and doc["effect"]["timeline"] == "gpu"
    dist = doc["effect"]["after_distribution"]
    assert set(dist) == {"steps", "mean_ns", "p10_ns", "p50_ns", "p90_ns", "max_ns", "long_steps", "long_share_pct",
                         "note"}
    assert dist["p10_ns"] <= dist["p50_ns"] <= dist["p90_ns"] <= dist["max_ns"] and dist["steps"] == 28
    assert doc["processes"][0]["before_distribution"] == doc["effect"]["before_distribution"]
    assert {m["id"] for m in doc["metrics"]["whole_run"]} >= {"span_ns", "gpu_busy_ns", "gpu_utilization_pct",
                                                             "api_ns", "transfer_share_pct"}
    assert doc["kernels"][0]["name"] == "gemm_kernel" and doc["kernels"][0]["status"] == "slower"


def test_junit_and_gate_threshold(synth, capsys):
    code, out, err = cli(capsys, synth["base"], synth["slower"], "--format", "junit", "--fail-on-regression", "10")
    assert code == 1, err
    suite = ET.fromstring(out).find("testsuite")
    assert suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["step time: no regression beyond 10 %"]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["metric"] == "mean_step_period_ns" and 15 < float(props["change_pct"]) < 25
    assert float(props["before_p10_ns"]) < float(props["before_p50_ns"]) < float(props["before_p90_ns"])
    assert "after_tail_note" not in props  # a steady run: no heavy tail to note
    assert "AFTER step times: 28 steps: mean 12" in suite.find("testcase[@name='step time: no regression beyond 10 %']"
                                                               "/system-out").text
    code, out, _ = cli(capsys, synth["base"], synth["slower"], "--format", "junit", "--fail-on-regression", "30")
    assert code == 0 and ET.fromstring(out).find("testsuite").get("failures") == "0"


def test_inconclusive_passes_the_gate_unless_asked(synth, capsys):
    code, out, _ = cli(capsys, synth["few_a"], synth["few_b"], "--fail-on-regression", "5")
    assert code == 0 and "**Inconclusive**" in out and "too few steps" in out
    assert cli(capsys, synth["few_a"], synth["few_b"], "--fail-on-inconclusive")[0] == 1


@pytest.mark.parametrize("args,needle", [
    (["/no/such/before.sqlite", "{base}"], "no such file"),
    (["{base}", str(ROOT / "pyproject.toml")], "not a SQLite database"),
    (["{base}", "{base}", "-o", "{base}"], "refusing to overwrite"),
    (["{base}", "{base}", "--fail-on-regression", "-3"], "-3"),
    (["{base}"], "Missing argument"),
])
def test_bad_inputs_are_one_line_exit_2(synth, capsys, args, needle):
    code, out, err = cli(capsys, *[a.format(base=synth["base"]) for a in args])
    assert code == 2, out
    assert needle in err and len(err.strip().splitlines()) == 1, err


def test_unreadable_nsys_report_is_one_line_exit_2(synth, capsys, tmp_path):
    report = tmp_path / "broken.nsys-rep"
    report.write_bytes(b"not a report")
    code, _, err = cli(capsys, report, synth["base"])
    assert code == 2 and str(report) in err and len(err.strip().splitlines()) == 1, err


# ---- statistics -------------------------------------------------------------------------------

@pytest.mark.parametrize("n,m", [(1, 1), (2, 3), (3, 3), (4, 6), (5, 5)])
def test_exact_u_distribution_matches_enumeration(n, m):
    counts = [0] * (n * m + 1)
    for chosen in itertools.combinations(range(n + m), n):  # ranks of the first sample
        counts[sum(r for r in chosen) - sum(range(n))] += 1  # U = rank sum - n(n+1)/2 (0-based)
    total = math.comb(n + m, n)
    cdf = list(itertools.accumulate(c / total for c in counts))
    assert _exact_u_cdf(n, m) == pytest.approx(cdf)


def test_rank_test_known_values():
    assert mann_whitney([1, 2, 3], [4, 5, 6]).p_value == pytest.approx(0.1)        # 2 / C(6, 3)
    assert mann_whitney(list(range(5)), list(range(10, 15))).p_value == pytest.approx(2 / 252)
    same = mann_whitney([3.0] * 8, [3.0] * 8)
    assert same.p_value == 1.0 and same.prob_after_smaller == 0.5
    big = mann_whitney(list(range(100)), [x + 0.5 for x in range(100)])  # shifted by half a step
    assert 0.9 < big.p_value <= 1.0 and big.method == "normal"
    far = mann_whitney(list(range(30)), list(range(100, 130)))
    assert far.p_value < 1e-9 and far.prob_after_smaller == 0.0


def test_bootstrap_interval_is_deterministic_and_covers_the_shift():
    a = [100 + (i % 7) for i in range(40)]
    b = [x * 1.2 for x in a]
    ci = median_change_ci(a, b)
    assert 0 < ci.low <= 0.2 <= ci.high < 0.45
    noisy_a, noisy_b = jittered(40, 1000, 0.1, 1), jittered(40, 1000, 0.1, 2)
    first = median_change_ci(noisy_a, noisy_b)
    assert first == median_change_ci(noisy_a, noisy_b) and first.low < 0 < first.high
    sample = block_resample(list(range(27)), random.Random(0))
    assert len(sample) == 27 and all(y == (x + 1) % 27 for x, y in zip(sample[0::3], sample[1::3]))  # blocks of 3


def test_blocks_span_a_burst_cycle():
    steady = [100.0 + (i % 5) for i in range(36)]
    assert block_length(steady) == 3  # 36^(1/3)
    cycle = [400.0 if i % 6 == 5 else 5.0 for i in range(36)]
    assert block_length(cycle) == 6  # one wait and the five ready steps after it
    assert block_length([1000.0] + [5.0] * 17) == 9  # one wait in 18 steps: half the run, no more
    # whole cycles in every block: each resample holds six waits, so the interval is only the jitter's
    ci = mean_change_ci(steady, cycle)
    assert ci.high - ci.low < 0.02
    # with blocks of 3, a resample draws the waits at random: the interval is 20x wider
    rng = random.Random(0)
    shuffled = sorted(cycle, key=lambda _: rng.random())
    assert mean_change_ci(steady, shuffled).high - mean_change_ci(steady, shuffled).low > 0.2


def test_step_distribution_and_heavy_tail_note():
    d = describe([5e6] * 15 + [300e6, 400e6, 500e6])
    assert (d.steps, d.p50_ns, d.max_ns, d.long_steps) == (18, 5e6, 500e6, 3)
    assert d.p10_ns == 5e6 and d.p90_ns == pytest.approx(300e6 + 0.3 * 100e6)  # between the 16th and 17th
    assert d.mean_ns == pytest.approx((75e6 + 1200e6) / 18)
    assert d.note == ("3 of 18 steps take 94 % of the time (each over 2x the median 5 ms): "
                      "the mean, 70.8 ms, is the pace")
    assert describe([10.0, 11.0, 12.0, 30.0]).note.startswith("1 of 4 steps take 48 % of the time")
    assert describe([10.0] * 17 + [25.0]).note is None  # one slow step, 12 % of the time: no note
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5 and quantile([7.0], 0.9) == 7.0


# ---- a wide interval is inconclusive, never no-change --------------------------------------------

BURSTY_BEFORE = [20, 150, 150, 20, 30, 150, 400, 150, 20, 150, 20, 400, 30, 150]  # ms: loader waits at random
BURSTY_AFTER = [361.4, 15.0, 127.1, 24.5, 82.0, 128.2, 23.4, 13.0, 79.8, 18.0, 109.2, 334.9, 136.2, 16.7]


def _series(ms: list[float]):
    from nsys_diagnose.compare.steps import StepSeries
    ns = [int(x * 1e6) for x in ms]
    return StepSeries(pid=1, name="train_step", source="nvtx", total_steps=len(ns) + 2, periods_ns=ns,
                      host_periods_ns=ns)


def test_wide_interval_around_a_large_effect_is_inconclusive():
    from nsys_diagnose.compare.verdict import Settings, compare_steps, overall
    before, after = _series(BURSTY_BEFORE), _series(BURSTY_AFTER)
    p = compare_steps(before, after, Settings())
    assert p.change_pct < -15 and p.ci_low_pct < -5 < 0 < p.ci_high_pct  # a large effect, a wide interval
    assert p.verdict == "inconclusive" and f"{p.change_pct:+.1f} %" in p.reason and "too wide" in p.reason
    # the same steps where only a change over 50 % counts as large
    assert compare_steps(before, after, Settings(large_effect_pct=50)).verdict == "no-change"
    # a process that could not be judged outweighs one that did not change
    same = compare_steps(before, before, Settings())
    assert same.verdict == "no-change" and overall([same, p])[0] == "inconclusive"
