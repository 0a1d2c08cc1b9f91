"""The expert rules fp32-gemm, fusion-candidates, pageable-memcpy, allocation-churn,
memory-headroom and small-grids on the real exports: which fire where, and what they name.

Each H200 export was built with one known bottleneck (../shared/exports/h200-nsys2025.3/README.md);
compute_bf16 is the healthy control. The public exports come from older nsys versions that lack
tables and columns: there the rules must skip or pass, never error.
"""

from __future__ import annotations

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules

from .conftest import H200, PUBLIC, h200_names, needs_shared

pytestmark = needs_shared

OURS = ["fp32-gemm", "fusion-candidates", "pageable-memcpy", "allocation-churn", "memory-headroom", "small-grids"]

# export -> the rules of OURS that must fire on it (all others must stay quiet)
EXPECTED_FIRING = {
    "compute_bf16": set(),
    "compute_fp32": {"fp32-gemm"},
    "dataloader_bound": {"pageable-memcpy", "memory-headroom"},
    "launch_bound": {"fp32-gemm", "fusion-candidates", "small-grids", "memory-headroom"},
    "launch_graphs": set(),
    "multiproc": {"fp32-gemm"},
    "transfer_pageable": {"pageable-memcpy"},
}


@pytest.fixture(scope="module")
def reports():
    rules = load_rules()  # (the run's shared cache: conftest's session-wide NSYS_DIAGNOSE_CACHE_DIR)
    return {name: analyze(H200 / f"{name}.sqlite", rules=rules, select=OURS) for name in h200_names()}


def _result(report, rule_id):
    return next(r for r in report.rules if r.id == rule_id)


def test_every_export_is_listed():
    assert set(h200_names()) == set(EXPECTED_FIRING)


@pytest.mark.parametrize("name", sorted(EXPECTED_FIRING))
def test_which_rules_fire(reports, name):
    report = reports[name]
    assert all(r.status != "error" for r in report.rules), [(r.id, r.reason) for r in report.rules]
    fired = {r.id for r in report.rules if r.status == "fired"}
    assert fired == EXPECTED_FIRING[name]


def test_healthy_control_gets_no_warning(reports):
    findings = [f for r in reports["compute_bf16"].rules for f in r.findings]
    assert findings == []


def test_fp32_gemm_names_the_cuda_core_kernel(reports):
    (finding,) = _result(reports["compute_fp32"], "fp32-gemm").findings
    assert finding.severity == "warning"
    assert finding.evidence["name"].startswith("sm80_xmma_gemm_f32f32_f32f32_f32")
    assert "_ffma_" in finding.evidence["name"]
    assert "sm80_xmma_gemm_f32f32" in finding.message and "NVIDIA H200" in finding.message
    assert finding.evidence["fp32_share_pct"] > 90
    assert finding.impact_ns > 0


def test_fp32_gemm_is_per_process_on_a_shared_gpu(reports):
    # multiproc: one process runs compute_fp32, the other compute_bf16, both on GPU 0
    report = reports["multiproc"]
    assert len(report.metrics.processes) == 2
    (finding,) = _result(report, "fp32-gemm").findings
    fp32_pids = {r["pid"] for r in _result(report, "fp32-gemm").rows}
    assert fp32_pids == {finding.evidence["pid"]}
    assert "_ffma_" in finding.evidence["name"]


def test_pageable_copies_name_the_direction_and_the_fix(reports):
    for name in ("transfer_pageable", "dataloader_bound"):
        result = _result(reports[name], "pageable-memcpy")
        top = result.findings[0]
        # dataloader_bound's copies are 1.3 % of a step that waits on data loading: info, with why
        want = "warning" if name == "transfer_pageable" else "info"
        assert top.severity == want and top.evidence["kind"] == "Host-to-Device"
        assert want == "warning" or "critical path" in top.note
        assert "pin_memory" in top.fix and "non_blocking=True" in top.fix
        assert top.evidence["est_saving_ns"] > 0
    # the 256 MiB tensor of every step after the first
    h2d = _result(reports["transfer_pageable"], "pageable-memcpy").findings[0].evidence
    assert h2d["count"] == 19 and h2d["max_bytes"] == 256 * 2**20


def test_transfer_share_leaves_the_pageable_diagnosis_to_pageable_memcpy():
    spec = load_rules()["transfer-share"]
    assert all("pageable_bytes >=" not in f.when for f in spec.findings)


def test_launch_bound_fusion_and_small_grids(reports):
    report = reports["launch_bound"]
    (fusion,) = _result(report, "fusion-candidates").findings
    assert fusion.evidence["ew_launches_per_step"] > 500  # ~1,000 elementwise kernels per step
    assert fusion.severity == "info"  # the GPU idles: launch overhead, not fusion, is the cause
    (grids,) = _result(report, "small-grids").findings
    assert grids.evidence["sm_count"] == 132 and grids.evidence["grid_size"] < 132


def test_memory_headroom_reads_real_memory_events(reports):
    # allocations only (the caching allocator keeps what it takes); peaks well under 150 GB
    for name, report in reports.items():
        result = _result(report, "memory-headroom")
        assert result.status in ("fired", "passed"), (name, result.reason)
        for row in result.rows:
            assert 0 < row["peak_bytes"] < row["memory_bytes"] and row["unmatched_frees"] == 0
    (advice,) = _result(reports["launch_bound"], "memory-headroom").findings
    assert advice.severity == "info" and advice.evidence["batch_scale_floor"] >= 2


def test_allocation_churn_ignores_warm_up(reports):
    # every H200 program allocates only during its first steps (the caching allocator warming up)
    for report in reports.values():
        assert _result(report, "allocation-churn").findings == []


PUBLIC_FILES = sorted(PUBLIC.glob("*.sqlite")) if PUBLIC.is_dir() else []


@pytest.mark.parametrize("path", PUBLIC_FILES, ids=lambda p: p.stem[:40])
def test_old_exports_skip_or_pass_never_error(path):
    report = analyze(path, select=OURS)
    for result in report.rules:
        assert result.status in ("fired", "passed", "skipped"), (result.id, result.reason)
        if result.status == "skipped":
            assert result.reason.startswith("not captured")
