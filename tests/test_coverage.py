"""Saying when the rules could not look (analyses/coverage.py): a capture whose GPU side was lost,
one cut before its steady state, timestamps that run backwards, too few steps; how each renderer,
the batch summary and `compare` carry it. Inputs are modified copies of fixture exports and small
synthetic exports, in temporary folders."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.batch import summary
from nsys_diagnose.batch.work import Outcome
from nsys_diagnose.compare import compare
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.report import html, markdown
from nsys_diagnose.report.json import render as render_json

from .conftest import FIXTURES, H200, needs_shared
from .synth import write_export

RULES = load_rules()
EXPORTS = FIXTURES / "exports"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def copy_of(name: str, tmp_path: Path, sql: str) -> Path:
    out = tmp_path / f"{name}.sqlite"
    shutil.copy(EXPORTS / f"{name}.sqlite", out)
    out.chmod(0o644)
    con = sqlite3.connect(out)
    con.executescript(sql)
    con.commit()
    con.close()
    return out


def report_of(path: Path):
    return analyze(path, rules=RULES, use_cache=False)


PID = 100
GPID = (1 << 48) + PID * (1 << 24)


def loop(path: Path, steps: int, step_ns: int = 10_000_000, graph_ns: int | None = None) -> Path:
    """A loop of `steps` NVTX "train_step" ranges, each launching one kernel that runs half the step;
    with graph_ns, each replaying a CUDA graph of graph_ns traced as a whole instead (nsys's default
    --cuda-graph-trace=graph: no kernel rows)."""
    nvtx, api, gpu = [], [], []
    t = 1_000_000_000
    for i in range(steps):
        nvtx.append({"start": t, "end": t + step_ns, "eventType": 59, "textId": 1, "globalTid": GPID + PID,
                     "endGlobalTid": None, "domainId": 0})
        api.append({"start": t + 1_000, "end": t + 6_000, "eventClass": 0, "globalTid": GPID + PID,
                    "correlationId": i + 1, "nameId": 3 if graph_ns is None else 4, "returnValue": 0})
        op = {"start": t + 10_000, "end": t + 10_000 + (step_ns // 2 if graph_ns is None else graph_ns), "deviceId": 0,
              "contextId": 1, "streamId": 7, "correlationId": i + 1, "globalPid": GPID}
        gpu.append({**op, "demangledName": 2, "shortName": 2, "gridX": 1024, "gridY": 1, "gridZ": 1,
                    "blockX": 256, "blockY": 1, "blockZ": 1} if graph_ns is None else {**op, "graphId": 1, "graphExecId": 1})
        t += step_ns
    return write_export({
        "StringIds": [{"id": 1, "value": "train_step"}, {"id": 2, "value": "gemm_kernel"},
                      {"id": 3, "value": "cudaLaunchKernel_v7000"}, {"id": 4, "value": "cudaGraphLaunch_v10000"}],
        "NVTX_EVENTS": nvtx, "CUPTI_ACTIVITY_KIND_RUNTIME": api,
        "CUPTI_ACTIVITY_KIND_KERNEL" if graph_ns is None else "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": gpu,
        "TARGET_INFO_GPU": [{"id": 0, "name": "NVIDIA H200", "smCount": 132, "totalMemory": 150_000_000_000,
                             "computeMajor": 9, "computeMinor": 0}],
        "PROCESSES": [{"globalPid": GPID, "pid": PID, "name": "python3"}]}, path)


@pytest.fixture(scope="module")
def no_gpu(tmp_path_factory) -> Path:
    """dataloader_bound with its kernel, copy and memset rows removed: a capture whose GPU side was lost."""
    return copy_of("dataloader_bound", tmp_path_factory.mktemp("no-gpu"),
                   "".join(f"DELETE FROM {t};" for t in GPU_TABLES))


def test_lost_gpu_side_says_so_and_speaks_of_no_gpu_time(no_gpu):
    r = report_of(no_gpu)
    assert r.coverage.status == "could-not-look" and [g.id for g in r.coverage.gaps] == ["no-gpu-activity"]
    assert r.headline.startswith("No CUDA activity was captured") and "No bottleneck found" not in r.headline
    assert "nsys profile --trace cuda" in r.coverage.gaps[0].capture
    # the loader rule still matches the "Data Loading" ranges, but a GPU that "idles" there was not recorded
    stall = next(x for x in r.rules if x.id == "input-pipeline-stall")
    assert stall.status == "skipped" and "withheld" in stall.reason and stall.rows
    assert r.findings == []
    md = markdown.render(r)
    assert "idles" not in md and "DataLoader" not in md and "Coverage: could-not-look" in md
    assert "the rules could not look" in md
    page = html.render(r)
    assert "coverage-could-not-look" in page and "idles" not in page
    assert '"coverage"' in render_json(r) and '"status": "could-not-look"' in render_json(r)


def test_timestamps_that_run_backwards_are_counted_and_left_out(tmp_path):
    path = copy_of("compute_fp32", tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 1000 "
                                             "WHERE rowid % 10 = 0; UPDATE CUPTI_ACTIVITY_KIND_KERNEL "
                                             "SET \"end\" = start WHERE rowid % 10 = 5;")
    con = sqlite3.connect(path)
    total, back, zero = con.execute('SELECT count(*), sum("end" < start), sum("end" = start) '
                                    "FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    r = report_of(path)
    gap = next(g for g in r.coverage.gaps if g.id == "timestamps-backwards")
    assert r.coverage.status == "partial"
    assert gap.evidence["kernel"] == {"records": total, "backwards": back, "zero_length": zero}
    assert f"{back:,} end before they start" in gap.message and f"{zero:,} last 0 ns" in gap.message
    assert r.metrics.kernel_count == total - back  # no figure is built from a backwards record
    assert "No bottleneck found" not in r.headline
    assert "`timestamps-backwards`" in markdown.render(r)


def test_capture_cut_before_the_steady_state(tmp_path):
    r = report_of(loop(tmp_path / "two.sqlite", 2))
    assert r.coverage.status == "could-not-look"
    gap = r.coverage.gaps[0]
    assert gap.id == "startup-only" and gap.pid == PID and gap.evidence["step_ranges"] == 2
    assert r.headline.startswith("The capture stops before pid 100's steady state")


def test_too_few_steps_for_a_step_time(tmp_path):
    r = report_of(loop(tmp_path / "three.sqlite", 3))
    assert r.coverage.status == "partial" and [g.id for g in r.coverage.gaps] == ["too-few-steps"]
    assert r.coverage.gaps[0].evidence["steps"] == 2
    assert not r.headline.startswith("No bottleneck found")


def test_a_full_loop_is_complete(tmp_path):
    r = report_of(loop(tmp_path / "ten.sqlite", 10))
    assert r.coverage.status == "complete" and r.coverage.gaps == []


def test_graph_replays_without_their_kernels_are_looked_at_in_part(tmp_path):
    # replays of 9 ms a 10 ms step: most of the steady state is GPU time no kernel rule saw
    r = report_of(loop(tmp_path / "opaque.sqlite", 10, graph_ns=9_000_000))
    assert r.coverage.status == "partial" and [g.id for g in r.coverage.gaps] == ["graph-kernels-untraced"]
    gap = r.coverage.gaps[0]
    assert gap.pid == PID and gap.evidence["replays"] == 9 and gap.evidence["replay_ns"] == 9 * 9_000_000
    assert "--cuda-graph-trace=node" in gap.capture
    assert r.headline.startswith("Looked in part: The kernels inside pid 100's CUDA graph replays were not traced")
    # replays of 2 ms a step leave most of it to what was traced: complete
    assert report_of(loop(tmp_path / "short.sqlite", 10, graph_ns=2_000_000)).coverage.status == "complete"


def test_batch_summary_shows_the_coverage(no_gpu):
    r = report_of(no_gpu)
    out = Outcome(name="no_gpu", path=str(no_gpu), status="ok", json_text=render_json(r))
    rec = summary.record(out, "no_gpu.json", None)
    assert rec["coverage"] == "could-not-look" and rec["coverage_gaps"] == ["no-gpu-activity"]
    md = summary.markdown([rec], [], seconds=1.0)
    assert "ok · could-not-look (no-gpu-activity)" in md and "No CUDA activity was captured" in md
    table = summary.reports_table([rec])
    assert table.column("coverage").to_pylist() == ["could-not-look"]


def test_compare_never_calls_an_unseen_pair_no_change(tmp_path):
    path = copy_of("compute_fp32", tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start "
                                             "WHERE rowid % 50 = 7;")
    c = compare(path, path, rules=RULES, use_cache=False)
    assert c.before.coverage == "partial" and c.verdict == "inconclusive", c.summary
    assert "looked at in part" in c.summary and "Timestamps run backwards" in c.summary


# ---- shared-gpu: the stretch of a process's kernels beside another's, on the real export ----------

def _stretch_by_hand(path: Path, pid: int, other: int, steady_start: int) -> tuple[float, float, int, int]:
    """The fp32 GEMM of `pid` alone (no kernel of `other` at any time) and beside `other`'s kernels
    (at least half its time), in `pid`'s steady state: medians in ns and counts, by plain Python."""
    import statistics

    con = sqlite3.connect(path)
    rows = con.execute("SELECT (globalPid >> 24) & 16777215, start, \"end\", shortName, gridX, blockX "
                       "FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    con.close()
    others: list[list[int]] = []
    for s, e in sorted((r[1], r[2]) for r in rows if r[0] == other):
        if others and s <= others[-1][1]:
            others[-1][1] = max(others[-1][1], e)
        else:
            others.append([s, e])
    mine = [r for r in rows if r[0] == pid and r[1] >= steady_start]
    gemm = max({r[3:] for r in mine}, key=lambda k: sum(r[2] - r[1] for r in mine if r[3:] == k))
    alone, beside = [], []
    for r in mine:
        if r[3:] != gemm:
            continue
        overlap = sum(max(0, min(r[2], e) - max(r[1], s)) for s, e in others)
        (alone if overlap == 0 else beside if 2 * overlap >= r[2] - r[1] else []).append(r[2] - r[1])
    return statistics.median(alone), statistics.median(beside), len(alone), len(beside)


@needs_shared
def test_shared_gpu_measures_the_stretch_and_says_when_it_cannot():
    path = H200 / "multiproc.sqlite"
    r = analyze(path, rules=RULES, select=["shared-gpu"])
    result = next(x for x in r.rules if x.id == "shared-gpu")
    rows = {row["pid"]: row for row in result.rows}
    steady = {s.pid: s for s in r.steady}
    fp32, bf16 = (p for p in sorted(rows, key=lambda p: -rows[p]["kernel_ns"]))
    alone, beside, n_alone, n_beside = _stretch_by_hand(path, fp32, bf16, steady[fp32].start_ns)
    row = rows[fp32]
    assert (row["top_alone_ns"], row["top_beside_ns"], row["top_alone_n"], row["top_beside_n"]) == (
        int(alone), int(beside), n_alone, n_beside)
    assert beside > 2 * alone  # the fp32 GEMM: 49.3 ms beside the bf16 process's kernels, 21.6 ms alone
    assert row["stretch_window_pct"] > 5 and row["other_window_pct"] < 1  # it costs, yet never waits
    stretch = next(f for f in result.findings if f.evidence["pid"] == fp32)
    assert stretch.severity == "warning" and "Time-slicing stretches" in stretch.message
    assert stretch.impact_ns == row["stretch_ns"]
    # the bf16 process's kernels never ran alone: no figure, and it says so
    assert rows[bf16]["compared_kernels"] == 0 and rows[bf16]["unmeasured_pct"] > 99
    blind = next(f for f in result.findings if f.evidence["pid"] == bf16)
    assert "cannot tell" in blind.message and "barely wait" not in " ".join(f.message for f in result.findings)
