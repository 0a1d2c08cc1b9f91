"""Diagnoses on real exports: the report opens with the verified cause, healthy programs get no
steady-state warning, and no fix advises what the trace shows is already done."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from nsys_diagnose.analyze import analyze
from nsys_diagnose.ingest.database import open_trace

from .conftest import FIXTURES, H200, PUBLIC, needs_shared

CORPUS = FIXTURES / "exports" / "corpus.yaml"
ENTRIES = yaml.safe_load(CORPUS.read_text()) if CORPUS.exists() else []
EXPORTS = sorted([*H200.glob("*.sqlite"), *PUBLIC.glob("*.sqlite"), *(FIXTURES / "exports").glob("*.sqlite")])

# the rule that must open the report, per verified cause (H200 README; fixtures/exports/corpus.yaml)
H200_TOP = {"dataloader_bound": {"input-pipeline-stall"}, "launch_bound": {"launch-bound-loop"},
            "compute_fp32": {"fp32-gemm"}, "transfer_pageable": {"transfer-share", "pageable-memcpy"},
            "multiproc": {"fp32-gemm"}, "compute_bf16": None, "launch_graphs": None}
CAUSE_RULES = {
    "data-loading": {"input-pipeline-stall"}, "launch": {"launch-bound-loop"},
    "sync": {"host-sync-in-loop", "cuda-api-overhead", "idle-gap-causes", "gpu-idle-gaps"},
    "allocation": {"allocation-churn", "idle-gap-causes", "cuda-api-overhead"},
    "pageable-copy": {"pageable-memcpy", "transfer-share"}, "fp32-math": {"fp32-gemm"},
    "elementwise": {"fusion-candidates"}, "copy": {"transfer-share", "pageable-memcpy"},
    "io": {"nvtx-ranges", "idle-gap-causes", "gpu-idle-gaps", "input-pipeline-stall"},
    "sleep": {"nvtx-ranges", "idle-gap-causes", "gpu-idle-gaps", "input-pipeline-stall"},
    "host-compute": {"nvtx-ranges", "idle-gap-causes", "gpu-idle-gaps", "input-pipeline-stall"},
    "small-grid": {"small-grids"},
    "recompile": {"compile-in-loop", "unsteady-steps"},
    "unfused-optimizer": {"fusion-candidates"},
    # issue 33's families: a slow numeric format, steps that do not repeat, floods of a non-launch call
    "numeric-format": {"numeric-format", "fp32-gemm"}, "unsteady-steps": {"unsteady-steps"}, "call-flood": {"call-flood"},
    # round four: threads of one process contending for the GIL
    "gil": {"gil-contention"}, "layout": {"layout-conversions"}, "alignment": {"gemm-alignment"},
    # round nine: every launch call waits for its own kernel (CUDA_LAUNCH_BLOCKING=1 left on)
    "synchronous-launches": {"synchronous-launches"},
    # round seven: one kernel (a sort in two instantiations) holding half the GPU time
    "dominant-kernel": {"hot-kernels"},
    # round five: a CUDA graph captured anew every step
    "graph-recapture": {"nvtx-ranges", "idle-gap-causes"},
    # round ten: the GPU waits for input that another thread paces with a sleep (an idle server)
    "paced-input": {"input-pipeline-stall"},
    # copy kernels (.contiguous(), clone, cat) a quarter of a busy GPU's time
    "copies": {"fusion-candidates"},
    # round eleven: the thread that feeds the GPU waits for a child process it started every step
    "child-process": {"idle-gap-causes", "nvtx-ranges", "gpu-idle-gaps"},
    # the thread that feeds the GPU waits on sockets for input from outside the trace
    "network-input": {"input-pipeline-stall"},
    # processes time-slicing one GPU
    "shared-gpu": {"shared-gpu"},
    # round fourteen: memsets most of a busy GPU's step; managed memory migrating every iteration
    # (the host's touches of managed pages are host time; the migrations are transfer-share's)
    "memsets": {"transfer-share"}, "managed-memory": {"idle-gap-causes", "transfer-share"},
    # round eighteen: a jitted step that stops for an XLA host callback (jax.debug.callback)
    "host-callback": {"idle-gap-causes", "nvtx-ranges", "gpu-idle-gaps"},
}


def steady_warnings(report):
    return [f for f in report.findings if f.severity != "info" and f.recoverable_ns is not None]


@needs_shared
@pytest.mark.parametrize("name", sorted(H200_TOP))
def test_h200_report_opens_with_the_verified_cause(name):
    path = H200 / f"{name}.sqlite"
    report = analyze(path)
    want = H200_TOP[name]
    if want is None:
        assert steady_warnings(report) == [], [f.message for f in steady_warnings(report)]
        # launch_graphs replays its steps as graphs traced whole: no verdict on kernels never recorded
        opaque = [g.id for g in report.coverage.gaps] == ["graph-kernels-untraced"]
        assert opaque == (name == "launch_graphs")
        assert report.headline.startswith("Looked in part" if opaque else "No bottleneck found")
    else:
        assert report.findings[0].severity == "warning" and report.findings[0].rule_id in want
    assert report.steady and report.budget and report.steady_utilization_pct is not None


# Verified causes the diagnosis does not yet put first (issue 14 stays open on them); strict, so a
# fix shows up as an unexpected pass.
OPEN: dict[str, str] = {
}


@pytest.mark.parametrize("entry", [pytest.param(e, marks=pytest.mark.xfail(strict=True, reason=OPEN[e["file"]]))
                                   if e["file"] in OPEN else e for e in ENTRIES],
                         ids=[e["file"] for e in ENTRIES])
def test_corpus_report_opens_with_the_verified_cause(entry):
    report = analyze(FIXTURES / "exports" / entry["file"])
    if entry.get("healthy"):
        assert steady_warnings(report) == [], [f.message for f in steady_warnings(report)]
        return
    top = report.findings[0]
    assert top.severity == "warning", report.headline
    assert top.rule_id in CAUSE_RULES[entry["cause"]], (top.rule_id, report.headline)
    if entry.get("cause_range") and entry["cause"] not in ("launch",):
        assert entry["cause_range"] in report.headline + (top.claim or ""), report.headline


# Advice each corpus entry's trace rules out (its `forbidden` regexes, matched without case against
# every finding's fix); strict xfail where today's rules still give it, with the reason.
OPEN_FORBIDDEN: dict[str, str] = {}


@pytest.mark.parametrize("entry", [pytest.param(e, marks=pytest.mark.xfail(strict=True, reason=OPEN_FORBIDDEN[e["file"]]))
                                   if e["file"] in OPEN_FORBIDDEN else e for e in ENTRIES if e.get("forbidden")],
                         ids=[e["file"] for e in ENTRIES if e.get("forbidden")])
def test_corpus_fixes_avoid_the_advice_the_trace_rules_out(entry):
    fixes = [(f.rule_id, f.fix) for f in analyze(FIXTURES / "exports" / entry["file"]).findings if f.fix]
    hits = [(rule, pat) for pat in entry["forbidden"] for rule, fix in fixes if re.search(pat, fix, re.I)]
    assert hits == [], hits


# advice to pin (not allocation-churn's "allocate the pinned buffers once instead of calling pin_memory()
# per step", which is right where the program pins every step)
PINNED_ADVICE = re.compile(r"pin_memory=True|allocate the host (side|buffers) pinned", re.I)
PRECISION_ADVICE = re.compile(r"autocast|mixed precision|allow_tf32|float32_matmul_precision", re.I)
GRAPH_ADVICE = re.compile(r"capture the step in a CUDA Graph", re.I)


def facts(path: Path) -> dict[str, bool]:
    t = open_trace(path)
    try:
        q = lambda sql: t.con.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "copies": q("SELECT count(*) FROM memcpys WHERE kind = 'Host-to-Device'") > 0,
            # the loop's copies: start-up ones (model.to()) are often pageable where these are pinned
            "pageable": q("SELECT count(*) FROM memcpys m JOIN steady_state s USING (pid) WHERE m.host_memory = 'pageable' "
                          "AND m.start_ns >= s.start_ns AND m.start_ns < s.end_ns") > 0,
            # math in a slow format: fp32 on CUDA cores, fp64 (kernel_classes)
            "fp32_math": q("SELECT count(*) FROM budget WHERE cause IN ('fp32 math', 'fp64 math')") > 0,
            "tensor_math": q("SELECT count(*) FROM budget WHERE cause = 'tensor-core math'") > 0,
            "graphed": q("SELECT count(*) FROM graph_launches g JOIN steady_state s USING (pid) "
                         "WHERE g.start_ns >= s.start_ns AND g.start_ns < s.end_ns") > 0,
        }
    finally:
        t.close()


# exports on which a fix still advises what is done already (strict xfail, with the reason)
DONE_OPEN: dict[str, str] = {}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=DONE_OPEN[p.stem]))
                                  if p.stem in DONE_OPEN else p for p in EXPORTS], ids=lambda p: p.stem)
def test_no_fix_advises_what_is_already_done(path):
    f = facts(path)
    fixes = " ".join(x.fix for x in analyze(path).findings)
    if f["copies"] and not f["pageable"]:
        assert not PINNED_ADVICE.search(fixes), "advises pinned memory to copies that are all pinned"
    if f["tensor_math"] and not f["fp32_math"]:
        assert not PRECISION_ADVICE.search(fixes), "advises mixed precision to tensor-core math"
    if f["graphed"]:
        assert not GRAPH_ADVICE.search(fixes), "advises CUDA graphs to a loop that replays them"


def test_hot_kernel_at_tensor_core_rate_claims_no_recoverable_time():
    # issue 37: on compute_bf16 the bf16 nvjet GEMM (88 % of kernel time) claimed 55.3 ms of the
    # 62.6 ms steady state as recoverable; at tensor-core rate in bf16 the trace bounds no saving
    path = H200 / "compute_bf16.sqlite"
    if not path.exists():
        pytest.skip("../shared exports not present")
    hot = [f for f in analyze(path).findings if f.rule_id == "hot-kernels"]
    assert hot and all(f.recoverable_ns is None and f.claim is None for f in hot)
    assert all("already runs on tensor cores" not in f.fix and "FlashAttention" not in f.fix for f in hot)


@pytest.mark.parametrize("name, words", [("cpu_offload_sampled", "PyTorch CPU operators"),
                                         ("host_python_sampled", "Python code")])
def test_cpu_samples_name_the_host_code_the_gpu_waits_for(name, words):
    """Round six: with CPU sampling on, the headline says what the host runs in the GPU's gaps (the
    optimizer's CPU operators, the interpreter), and the message lists the functions."""
    report = analyze(FIXTURES / "exports" / f"{name}.sqlite")
    top = report.findings[0]
    assert top.rule_id == "idle-gap-causes" and f"(mostly {words})" in report.headline
    assert "CPU samples in these gaps" in top.message


def test_code_compiled_in_every_step_is_named_recompilation():
    """compiled_graph_rerecord loads new GPU code in every step: no clean step to compare with, and
    the fix is static shapes, not moving host code off the thread. What it loads is cuDNN's SDPA,
    built for each new length (cudnn_generated kernels, cuLibraryLoadData; no graph is recorded)."""
    report = analyze(FIXTURES / "exports" / "compiled_graph_rerecord.sqlite")
    top = report.findings[0]
    assert top.rule_id == "compile-in-loop" and top.evidence["every_step"] and top.evidence["compiler"] == "cudnn"
    assert "recompilation in every step" in report.headline and "keep shapes fixed" in report.headline


def test_a_batch_built_without_nvtx_is_named_by_its_cpu_samples():
    """dataloader_aug_sampled builds its batches on the training thread with no NVTX range: the
    stall's message says what the samples there run, not that nothing says more."""
    top = analyze(FIXTURES / "exports" / "dataloader_aug_sampled.sqlite").findings[0]
    assert top.rule_id == "input-pipeline-stall"
    assert "its CPU samples there: PyTorch CPU operators 44 %" in top.message
    assert "no NVTX range or traced call says more" not in top.message
