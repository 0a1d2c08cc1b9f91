"""The timeline the HTML report draws, binned in SQL (ingest/sql/queries/timeline.sql) so that its
size does not grow with the trace.

The trace window is cut into at most BINS equal bins. Per device (and, where several processes
share a device, per process) each bin carries the busy share of that bin: the busy intervals of
`device_busy` / `gpu_busy` clipped to the bin. NVTX lanes carry, per thread and nesting depth
(top-level ranges and their children), the range name that covers most of each bin, with runs of
bins of one name merged into segments whose edges are the ranges' own where they are longer than a
bin. A 10-minute trace and a trace of a million kernels give the same few kilobytes.

The timeline rides on the Report (`Report.timeline`) but is excluded from the JSON report: it is
a drawing aid, not a measurement, and the JSON contract stays what it is.
"""

from __future__ import annotations

import functools
import time

import duckdb
from nsys_diagnose.engine.model import (
    HostLane,
    NvtxLane,
    Segment,
    SteadyWindow,
    StepTicks,
    Timeline,
    UtilTrack,
)
from nsys_diagnose.ingest import sql_library
from nsys_diagnose.ingest.database import has_table
from nsys_diagnose.ingest.sql_library import query

BINS = 2000          # bins across the window: zooming in 20x still leaves 100 bins on screen
NVTX_DEPTHS = 2      # top-level ranges and their children: "rank0 > Model Computation" needs both
MAX_THREADS = 8      # NVTX lanes shown: the threads with the most top-level NVTX time
MAX_PROCESS_ROWS = 4  # per-process rows under a device that several processes share
EXACT_RANGES = 300   # a lane with at most this many ranges is drawn range by range, else binned
MAX_HOST_THREADS = 4  # CUDA API lanes: the threads with the most API time
MAX_STEP_TICKS = 1000  # step starts drawn per process; more are thinned to every n-th
MAX_STEP_ROWS = 8     # processes whose steps are drawn: those with the most steps
FOCUS_SHARE = 0.5    # a focus window under this share of the trace gets its own finer bins


@functools.cache
def host_kinds() -> tuple[str, ...]:
    """The kinds of CUDA-call time the timeline draws, in order (budget_causes' lanes)."""
    return tuple(r["lane"] for r in sql_library.data_rows("budget_causes") if r["lane"])


def _per_mille(rows, nkeys: int, params: dict, bins: int) -> dict[tuple, list[int]]:
    """Rows of (keys..., bin, busy ns) -> per key, the busy share of every bin (the last bin may be short)."""
    w0, w1, width = params["w0"], params["w1"], params["bin"]
    last = w1 - (w0 + (bins - 1) * width)
    out: dict[tuple, list[int]] = {}
    for row in rows:
        key, b, busy = tuple(row[:nkeys]), row[nkeys], row[nkeys + 1]
        if 0 <= b < bins:
            track = out.setdefault(key, [0] * bins)
            track[b] = min(1000, round(1000 * busy / (last if b == bins - 1 else width)))
    return out


def _devices(con, params: dict, bins: int) -> list[UtilTrack]:
    names = dict(con.execute(query("timeline_devices")).fetchall())
    busy = con.execute(query("timeline_device_busy")).fetchall()
    devices = _per_mille(con.execute(query("timeline_device_bins"), params).fetchall(), 1, params, bins)
    shared = con.execute(query("timeline_shared_processes"), {"max_procs": MAX_PROCESS_ROWS}).fetchall()
    procs = {}
    if shared:
        rows = con.execute(query("timeline_process_bins"), {**params, "device_ids": [r[0] for r in shared],
                                                             "pids": [r[1] for r in shared]}).fetchall()
        procs = _per_mille(rows, 2, params, bins)
    tracks = []
    for dev, ns in busy:
        label = f"GPU {dev}" + (f" · {names[dev]}" if names.get(dev) else "")
        tracks.append(UtilTrack(device_id=dev, label=label, busy_ns=ns or 0, util=devices.get((dev,), [0] * bins)))
        for _, pid, pns in (row for row in shared if row[0] == dev):
            tracks.append(UtilTrack(device_id=dev, pid=pid, label=f"GPU {dev} · pid {pid}", busy_ns=pns or 0,
                                    util=procs.get((dev, pid), [0] * bins)))
    return tracks


def _lanes(con, params: dict) -> tuple[list[NvtxLane], int]:
    rows = con.execute(query("timeline_nvtx_lanes"), {**params, "depths": NVTX_DEPTHS, "max_threads": MAX_THREADS,
                                                      "exact_ranges": EXACT_RANGES}).fetchall()
    names = {(p, t): n for p, t, n in con.execute(query("timeline_threads")).fetchall()}
    lanes: dict[tuple[int, int, int], NvtxLane] = {}
    thread_count = 0
    for pid, tid, depth, name, s, e, cover, ranges, _, count in rows:
        thread_count = count
        lane = lanes.get((pid, tid, depth))
        if lane is None:
            lane = lanes[(pid, tid, depth)] = NvtxLane(pid=pid, tid=tid, thread=names.get((pid, tid)),
                                                       depth=depth, segments=[])
        lane.segments.append(Segment(start_ns=s, end_ns=e, name=name or "", coverage=round(cover, 3),
                                     ranges=ranges))
    shown = len({(ln.pid, ln.tid) for ln in lanes.values()})
    return list(lanes.values()), max(0, thread_count - shown)


def _host(con, params: dict, bins: int) -> tuple[list[HostLane], int]:
    ranked = con.execute(query("timeline_host_threads"), {"max_threads": MAX_HOST_THREADS}).fetchall()
    if not ranked:
        return [], 0
    rows = con.execute(query("timeline_host_bins"), {**params, "pids": [r[0] for r in ranked],
                                                     "tids": [r[1] for r in ranked]}).fetchall()
    per = _per_mille(rows, 3, params, bins)
    names = {(p, t): n for p, t, n in con.execute(query("timeline_threads")).fetchall()}
    lanes = []
    for pid, tid, api_ns, _ in ranked:
        kinds = {k: per[(pid, tid, k)] for k in host_kinds() if (pid, tid, k) in per}
        for b in range(bins):  # nested calls (a runtime call and the driver call in it) can overfill a bin
            total = sum(v[b] for v in kinds.values())
            if total > 1000:
                for v in kinds.values():
                    v[b] = v[b] * 1000 // total
        lanes.append(HostLane(pid=pid, tid=tid, thread=names.get((pid, tid)), api_ns=api_ns or 0, kinds=kinds))
    return lanes, max(0, ranked[0][3] - len(lanes))


def _steps(con, w0: int, w1: int) -> list[StepTicks]:
    if not has_table(con, "steps"):
        return []
    rows = con.execute(query("timeline_step_starts"), {"w0": w0, "w1": w1, "rows": MAX_STEP_ROWS}).fetchall()
    rows.sort(key=lambda r: r[0])
    out = []
    for pid, count, starts in rows:
        starts = starts or []
        stride = max(1, -(-len(starts) // MAX_STEP_TICKS))
        out.append(StepTicks(pid=pid, count=count, stride=stride, starts_ns=starts[::stride]))
    return out


def _steady(con) -> list[SteadyWindow]:
    if not has_table(con, "steady_state"):  # built by ingest/sql/phases.sql; older caches lack it
        return []
    rows = con.execute(query("timeline_steady")).fetchall()
    return [SteadyWindow(pid=p, start_ns=s, end_ns=e, startup_ns=u, method=m) for p, s, e, u, m in rows]


def compute(con: duckdb.DuckDBPyConnection, bins: int = BINS, focus: tuple[int, int] | None = None) -> Timeline | None:
    """The binned timeline of an open trace; None when the trace has no window (nothing traced).
    `focus` (start, end): a window to bin again on its own (the leading steady state) when it is
    under FOCUS_SHARE of the trace."""
    started = time.perf_counter()
    w0, w1, _ = con.execute(query("report_window")).fetchone()
    if w0 is None or w1 is None or w1 <= w0:
        return None
    tl = _binned(con, w0, w1, bins)
    if focus is not None:
        f0, f1 = max(focus[0], w0), min(focus[1], w1)
        if f1 - f0 >= bins and f1 - f0 < FOCUS_SHARE * (w1 - w0):
            tl.focus = _binned(con, f0, f1, bins)
    tl.seconds = round(time.perf_counter() - started, 3)
    return tl


def _binned(con, w0: int, w1: int, bins: int) -> Timeline:
    bin_ns = -(-(w1 - w0) // bins)  # ceil: the bins cover the whole window
    n = -(-(w1 - w0) // bin_ns)
    params = {"w0": w0, "w1": w1, "bin": bin_ns}
    lanes, hidden = _lanes(con, params)
    host, hidden_host = _host(con, params, n)
    return Timeline(start_ns=w0, end_ns=w1, bin_ns=bin_ns, bins=n, devices=_devices(con, params, n), lanes=lanes,
                    host=host, hidden_threads=hidden, hidden_host_threads=hidden_host, steady=_steady(con),
                    steps=_steps(con, w0, w1))
