"""Invariants of the numbers, over generated traces, through the real code path.

Each example is a small nsys-shaped SQLite export (tests/synth.py) with kernels, memcpys and
memsets on a few devices and processes (overlapping, touching, zero-length, duplicated, broken
rows), plus CUDA API calls. It is ingested by open_trace/analyze like any export, and the
metrics and rules are checked against a plain-Python oracle:

- 0 <= every utilization <= 100 %;
- per device and process: busy (the union) + the idle gaps + the idle edges = the trace window;
- the gaps are disjoint, inside the window, overlap no GPU operation, and are exactly the holes
  of the union;
- per-kernel totals sum to the total kernel time (and match the oracle per name);
- the whole report is invariant under the row order of the export.

Budget: about 15 s of the suite. NSYS_DIAGNOSE_PROPERTY_EXAMPLES=200 digs deeper.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from nsys_diagnose.analyses.metrics import compute
from nsys_diagnose.analyze import analyze, tables_read
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.runner import run_rule
from nsys_diagnose.ingest.database import open_trace

from .synth import union, write_export

EXAMPLES = int(os.environ.get("NSYS_DIAGNOSE_PROPERTY_EXAMPLES", "8"))
# Each example ingests an export (about half a second), so the suite's runs do not shrink a
# failure (that can take minutes); a deep run (EXAMPLES above the default) does.
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if EXAMPLES > 8 else [])
SETTINGS = dict(deadline=None, phases=PHASES, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
RULES = load_rules()
CHECKED = ["gpu-idle-gaps", "hot-kernels", "transfer-share", "cuda-api-overhead"]
# every rule, its result kept whole (rows_limit only trims the JSON) and every gap listed
ALL_ROWS = {rid: r.model_copy(update={"rows_limit": 10**6}) for rid, r in RULES.items()}
NO_THRESHOLD = {"gpu-idle-gaps": {"min_gap_ns": 0}}
TABLES = tables_read([RULES[rid] for rid in CHECKED])  # the metrics' and the checked rules' tables

DEVICES = [0, 1, 5]
PIDS = [100, 4242]
NAMES = ["gemm", "relu", "it's \"odd\"", "核函数"]
US = 1_000  # generated times are on a microsecond grid, so intervals overlap and touch often


def gpid(pid: int) -> int:
    return (1 << 48) + pid * (1 << 24)


@st.composite
def gpu_ops(draw, max_size: int):
    """(device, pid, start, end) rows; a few are broken: no end, end before start, start 0."""
    rows = []
    for _ in range(draw(st.integers(0, max_size))):
        start = draw(st.integers(1, 300)) * US
        end = start + draw(st.integers(0, 40)) * US
        broken = draw(st.sampled_from([None] * 12 + ["no-end", "backwards", "zero-start"]))
        if broken == "no-end":
            end = None
        elif broken == "backwards":
            end = start - US
        elif broken == "zero-start":
            start = 0
        rows.append((draw(st.sampled_from(DEVICES)), draw(st.sampled_from(PIDS)), start, end))
    return rows


@st.composite
def traces(draw):
    kernels = [op + (draw(st.integers(0, len(NAMES) - 1)),) for op in draw(gpu_ops(max_size=30))]
    if draw(st.booleans()) and kernels:  # exact duplicate rows
        kernels += draw(st.lists(st.sampled_from(kernels), max_size=3))
    memcpys = [op + (draw(st.sampled_from([1, 2, 8])), draw(st.integers(0, 1 << 30)), draw(st.sampled_from([0, 1])))
               for op in draw(gpu_ops(max_size=8))]
    memsets = [op + (draw(st.integers(0, 1 << 20)),) for op in draw(gpu_ops(max_size=4))]
    apis = [(draw(st.sampled_from(PIDS)), s * US, s * US + draw(st.integers(0, 30)) * US)
            for s in draw(st.lists(st.integers(1, 400), max_size=8))]
    return {"kernels": kernels, "memcpys": memcpys, "memsets": memsets, "apis": apis}


def tables(trace: dict) -> dict[str, list[dict]]:
    def op(i, device, pid, start, end):
        return {"start": start, "end": end, "deviceId": device, "contextId": 1, "streamId": 7,
                "correlationId": i + 1, "globalPid": gpid(pid)}

    out = {
        "StringIds": [{"id": 1, "value": "cudaLaunchKernel_v7000"}, {"id": 2, "value": "cudaMemcpyAsync_v3020"}]
        + [{"id": 10 + i, "value": n} for i, n in enumerate(NAMES)],
        "CUPTI_ACTIVITY_KIND_KERNEL": [op(i, d, p, s, e) | {"demangledName": 10 + n, "shortName": 10 + n}
                                       for i, (d, p, s, e, n) in enumerate(trace["kernels"])],
        "CUPTI_ACTIVITY_KIND_MEMCPY": [op(1000 + i, d, p, s, e) | {"copyKind": k, "bytes": b, "srcKind": h,
                                                                  "dstKind": 2}
                                       for i, (d, p, s, e, k, b, h) in enumerate(trace["memcpys"])],
        "CUPTI_ACTIVITY_KIND_MEMSET": [op(2000 + i, d, p, s, e) | {"bytes": b, "memKind": 2}
                                       for i, (d, p, s, e, b) in enumerate(trace["memsets"])],
        "CUPTI_ACTIVITY_KIND_RUNTIME": [{"start": s, "end": e, "eventClass": 0, "globalTid": gpid(p) + 1,
                                         "correlationId": 5000 + i, "nameId": 1 + i % 2, "returnValue": 0}
                                        for i, (p, s, e) in enumerate(trace["apis"])],
    }
    return {name: rows for name, rows in out.items() if rows}  # nsys creates tables only with rows


# --- the oracle --------------------------------------------------------------------------------

def valid(start, end) -> bool:
    return start is not None and end is not None and start > 0 and end >= start


def oracle(trace: dict) -> dict:
    ops = [(d, p, s, e) for rows in (trace["kernels"], trace["memcpys"], trace["memsets"])
           for d, p, s, e, *_ in rows if valid(s, e)]
    spans = [(s, e) for _, _, s, e in ops] + [(s, e) for _, s, e in trace["apis"] if valid(s, e)]
    window = (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (None, None)
    per_pair = {}
    for d, p, s, e in ops:
        per_pair.setdefault((d, p), []).append((s, e))
    per_device = {}
    for d, _, s, e in ops:
        per_device.setdefault(d, []).append((s, e))
    kernels = {}
    for _, _, s, e, n in trace["kernels"]:
        if valid(s, e):
            count, total = kernels.get(NAMES[n], (0, 0))
            kernels[NAMES[n]] = (count + 1, total + e - s)
    return {"window": window, "ops": per_pair,
            "pair_union": {k: union(v) for k, v in per_pair.items()},
            "device_busy": {d: sum(e - s for s, e in union(v)) for d, v in per_device.items()},
            "kernels": kernels,
            "memcpy_ns": sum(e - s for _, _, s, e, *_ in trace["memcpys"] if valid(s, e)),
            "memset_ns": sum(e - s for _, _, s, e, *_ in trace["memsets"] if valid(s, e)),
            "api_calls": sum(1 for _, s, e in trace["apis"] if valid(s, e))}


# --- the properties ----------------------------------------------------------------------------

def export(trace: dict, folder: str, name: str = "trace.sqlite", order: random.Random | None = None) -> Path:
    t = tables(trace)
    if order is not None:
        for rows in t.values():
            order.shuffle(rows)
    return write_export(t, Path(folder) / name)


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(traces())
def test_invariants(trace):
    want = oracle(trace)
    with tempfile.TemporaryDirectory() as folder:
        t = open_trace(export(trace, folder), use_cache=False, tables=TABLES)  # the modules these read
        try:
            m = compute(t.con)
            results = {rid: run_rule(t.con, ALL_ROWS[rid], NO_THRESHOLD.get(rid, {}), t.captured) for rid in CHECKED}
        finally:
            t.close()
    for r in results.values():
        assert r.status != "error", r.reason
    start, end = want["window"]
    span = end - start if start is not None else 0
    assert (m.window_start_ns, m.window_end_ns, m.span_ns) == (start, end, span)

    # utilization: 0..100 % everywhere it is reported
    assert 0 <= m.gpu_utilization_pct <= 100
    for x in [*m.devices, *m.processes]:
        assert 0 <= x.utilization_pct <= 100 and 0 <= x.busy_ns <= span
    assert {d.device_id: d.busy_ns for d in m.devices} == want["device_busy"]
    assert m.gpu_busy_ns == sum(want["device_busy"].values())

    # per device and process: busy + gaps + idle edges = window; gaps = the holes of the union
    gaps = results["gpu-idle-gaps"].rows
    for (device, pid), merged in want["pair_union"].items():
        mine = sorted((g["start_ns"], g["end_ns"]) for g in gaps if (g["device_id"], g["pid"]) == (device, pid))
        assert mine == [(a[1], b[0]) for a, b in zip(merged, merged[1:])]
        busy = sum(e - s for s, e in merged)
        edges = (merged[0][0] - start) + (end - merged[-1][1])
        assert busy + sum(e - s for s, e in mine) + edges == span
        for g in (g for g in gaps if (g["device_id"], g["pid"]) == (device, pid)):
            assert g["busy_ns"] == busy and g["busy_ns"] + g["idle_ns"] == g["span_ns"] == span
            for col in ("utilization_pct", "idle_pct", "gap_share_pct", "steady_idle_pct", "steady_gap_pct"):
                assert g[col] is None or 0 <= g[col] <= 100, (col, g[col])
        for (_s1, e1), (s2, _e2) in zip(mine, mine[1:]):
            assert e1 <= s2  # disjoint
        for s, e in mine:
            assert start <= s < e <= end  # inside the window
            assert not any(s < oe and os_ < e for os_, oe in want["ops"][(device, pid)])  # idle indeed
    assert len(gaps) == sum(max(len(u) - 1, 0) for u in want["pair_union"].values())

    # per-kernel totals sum to the total kernel time
    hot = results["hot-kernels"].rows
    assert {r["name"]: (r["instances"], r["total_ns"]) for r in hot} == want["kernels"]
    assert sum(r["total_ns"] for r in hot) == m.kernel_ns and sum(r["instances"] for r in hot) == m.kernel_count
    for r in hot:
        assert r["share_pct"] is None or 0 <= r["share_pct"] <= 100
    transfers = results["transfer-share"]
    if transfers.status != "skipped":
        assert sum(r["total_ns"] for r in transfers.rows) == m.memcpy_ns + m.memset_ns
    assert (m.memcpy_ns, m.memset_ns) == (want["memcpy_ns"], want["memset_ns"])
    api = results["cuda-api-overhead"]
    assert sum(r["calls"] for r in api.rows) == m.api_count == want["api_calls"]


def rounded(value):
    """Floats to 12 significant digits: a sum or standard deviation over rows in another order
    may differ in the last bit (floating-point addition is not associative)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def comparable(report) -> dict:
    """The report minus what may differ between two runs: timings and the input's path/size."""
    doc = rounded(json.loads(report.model_dump_json()))
    doc.pop("input")
    for r in doc["rules"]:
        r.pop("seconds")
        r["rows"] = sorted(json.dumps(x, sort_keys=True) for x in r["rows"])  # ties may come in any order
        r["findings"] = sorted(json.dumps(x, sort_keys=True) for x in r["findings"])
    doc["findings"] = sorted(json.dumps(x, sort_keys=True) for x in doc["findings"])
    return doc


@settings(max_examples=max(EXAMPLES // 2, 2), **SETTINGS)
@given(traces(), st.randoms(use_true_random=False))
def test_report_is_invariant_under_row_order(trace, order):
    """Every rule, every metric: the same for the export as written and with each table's rows
    shuffled (nsys does not write rows sorted, and nothing may assume it)."""
    with tempfile.TemporaryDirectory() as folder:
        a = analyze(export(trace, folder, "a.sqlite"), rules=ALL_ROWS, use_cache=False)
        b = analyze(export(trace, folder, "b.sqlite", order), rules=ALL_ROWS, use_cache=False)
    ca, cb = comparable(a), comparable(b)
    for ra, rb in zip(ca["rules"], cb["rules"]):
        assert ra == rb, ra["id"]
    assert ca == cb
