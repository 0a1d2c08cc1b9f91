"""Our numbers against what nsys 2025.3.1 printed for the same real H200 exports."""

from __future__ import annotations

import csv
import re
from collections import defaultdict

import pytest
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.runner import run_rule
from nsys_diagnose.ingest.database import open_trace

from .conftest import H200, h200_names, needs_shared

pytestmark = needs_shared
RULES = load_rules()


def all_rows(name: str, rule_id: str, **params):
    trace = open_trace(H200 / f"{name}.sqlite")
    try:
        rule = RULES[rule_id].model_copy(update={"rows_limit": 10**9})
        result = run_rule(trace.con, rule, params, trace.captured)
        assert result.status in ("fired", "passed"), result.reason
        return result.rows
    finally:
        trace.close()


def reference(name: str, report: str) -> list[dict[str, str]]:
    path = H200 / "reference" / name / f"{name}_{report}.csv"
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", h200_names())
def test_hot_kernels_match_cuda_gpu_kern_sum(name):
    ours = {r["name"]: (r["instances"], r["total_ns"]) for r in all_rows(name, "hot-kernels")}
    theirs = {r["Name"]: (int(r["Instances"]), int(r["Total Time (ns)"])) for r in reference(name, "cuda_gpu_kern_sum")}
    assert ours == theirs


@pytest.mark.parametrize("name", h200_names())
def test_api_overhead_matches_cuda_api_sum(name):
    # nsys strips only 4-digit version suffixes; we strip all, so merge theirs the same way.
    theirs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in reference(name, "cuda_api_sum"):
        api = re.sub(r"_v[0-9]+$", "", r["Name"])
        theirs[api][0] += int(r["Num Calls"])
        theirs[api][1] += int(r["Total Time (ns)"])
    ours: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in all_rows(name, "cuda-api-overhead"):
        ours[r["api"]][0] += r["calls"]
        ours[r["api"]][1] += r["total_ns"]
    assert dict(ours) == dict(theirs)


def _kind(operation: str) -> str:
    return "memset" if operation == "[CUDA memset]" else operation.removeprefix("[CUDA memcpy ").removesuffix("]")


@pytest.mark.parametrize("name", h200_names())
def test_transfer_share_matches_mem_time_and_size_sum(name):
    times = {_kind(r["Operation"]): (int(r["Count"]), int(r["Total Time (ns)"]))
             for r in reference(name, "cuda_gpu_mem_time_sum")}
    sizes = {_kind(r["Operation"]): float(r["Total (MB)"]) for r in reference(name, "cuda_gpu_mem_size_sum")}
    if not times:
        with pytest.raises(AssertionError):  # nothing captured: the rule is skipped, not zero
            all_rows(name, "transfer-share")
        return
    rows = all_rows(name, "transfer-share")
    assert {r["kind"]: (r["count"], r["total_ns"]) for r in rows} == times
    # nsys prints megabytes (1e6 bytes) rounded to 3 decimals
    assert {r["kind"]: round(r["bytes"] / 1e6, 3) for r in rows} == pytest.approx(sizes, abs=0.0015)


@pytest.mark.parametrize("name", h200_names())
def test_idle_gaps_at_500ms_match_gpu_gaps(name):
    theirs = {(int(r["Duration (ns)"]), int(r["Start (ns)"]), int(r["PID"]), int(r["Device ID"]))
              for r in reference(name, "gpu_gaps")}
    rows = all_rows(name, "gpu-idle-gaps", min_gap_ns=500_000_000)
    assert {(r["duration_ns"], r["start_ns"], r["pid"], r["device_id"]) for r in rows} == theirs
