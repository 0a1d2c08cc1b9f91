"""The timeline the HTML report draws, binned in SQL so that its size does not grow with the trace.

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

BINS = 2000          # bins across the window: zooming in 20x still leaves 100 bins on screen
NVTX_DEPTHS = 2      # top-level ranges and their children: "rank0 > Model Computation" needs both
MAX_THREADS = 8      # NVTX lanes shown: the threads with the most top-level NVTX time
MAX_PROCESS_ROWS = 4  # per-process rows under a device that several processes share
EXACT_RANGES = 300   # a lane with at most this many ranges is drawn range by range, else binned
MAX_HOST_THREADS = 4  # CUDA API lanes: the threads with the most API time
MAX_STEP_TICKS = 1000  # step starts drawn per process; more are thinned to every n-th
MAX_STEP_ROWS = 8     # processes whose steps are drawn: those with the most steps
FOCUS_SHARE = 0.5    # a focus window under this share of the trace gets its own finer bins


# Busy share per bin of disjoint intervals: each interval is spread over the bins it touches
# (range() over bin numbers), clipped to each. Disjoint intervals touch at most (intervals + bins)
# bins in all, so this stays linear in the trace.
def _spread(where: str = "") -> str:
    """The CTE `spread`: one row per (interval of `clipped`, bin it touches), as bin number b."""
    return f"""
spread AS (
  SELECT *, unnest(range((s - $w0) // $bin, (e - 1 - $w0) // $bin + 1)) AS b FROM clipped WHERE e > s {where})"""



_OVERLAP = "least(e, $w0 + (b + 1) * $bin) - greatest(s, $w0 + b * $bin)"
_CLIP = "greatest(start_ns, $w0) AS s, least(end_ns, $w1) AS e"

_DEVICE_SQL = f"""
WITH clipped AS (SELECT device_id, {_CLIP} FROM device_busy),{_spread()}
SELECT device_id, b, sum({_OVERLAP}) AS busy FROM spread GROUP BY ALL"""

# processes that share a device: the busiest MAX_PROCESS_ROWS of each such device
_SHARED = """
shared AS (
  SELECT device_id, pid, busy FROM (
    SELECT device_id, pid, sum(duration_ns)::BIGINT AS busy,
           count(*) OVER (PARTITION BY device_id) AS procs,
           row_number() OVER (PARTITION BY device_id ORDER BY sum(duration_ns) DESC, pid) AS rank
    FROM gpu_busy GROUP BY device_id, pid)
  WHERE procs > 1 AND rank <= $max_procs)"""

_PROCESS_SQL = f"""
WITH {_SHARED},
clipped AS (SELECT device_id, pid, {_CLIP} FROM gpu_busy JOIN shared USING (device_id, pid)),{_spread()}
SELECT device_id, pid, b, sum({_OVERLAP}) AS busy FROM spread GROUP BY ALL"""

# NVTX: push/pop ranges by nesting depth; start/end ranges (no depth: they may cross threads and
# overlap freely) count as top level. The lanes are the threads with the most top-level time.
_LANE_SOURCE = {
    "nvtx_tree": "SELECT pid, tid, coalesce(depth, 0) AS depth, name, start_ns, end_ns FROM nvtx_tree "
                 f"WHERE coalesce(depth, 0) < {NVTX_DEPTHS}",
    "nvtx_ranges": "SELECT pid, tid, 0 AS depth, name, start_ns, end_ns FROM nvtx_ranges",
}

# A lane (thread, depth) with at most EXACT_RANGES ranges is drawn range by range. A busier lane
# is binned: per bin, the name covering most of it, that name's first start and last end inside
# the bin (so a segment's edges are its ranges' own) and the share of the bin covered; runs of
# consecutive bins of one name merge into a segment (gaps and islands).
_NVTX_SQL = f"""
WITH src AS ({{source}}),
threads_ranked AS (
  SELECT pid, tid, row_number() OVER (ORDER BY sum(end_ns - start_ns) DESC, pid, tid) AS lane_rank,
         count(*) OVER () AS thread_count
  FROM src WHERE depth = 0 GROUP BY pid, tid),
clipped AS (
  SELECT pid, tid, depth, name, {_CLIP}, count(*) OVER (PARTITION BY pid, tid, depth) AS lane_ranges
  FROM src JOIN threads_ranked USING (pid, tid)
  WHERE lane_rank <= $max_threads AND end_ns > $w0 AND start_ns < $w1),
exact AS (
  SELECT pid, tid, depth, name, s AS start_ns, e AS end_ns, 1.0 AS cover, 1 AS ranges
  FROM clipped WHERE lane_ranges <= $exact_ranges),{_spread("AND lane_ranges > $exact_ranges")},
per_name AS (
  SELECT pid, tid, depth, b, name, sum({_OVERLAP}) AS ov, count(*) FILTER (WHERE s >= $w0 + b * $bin) AS starts,
         min(greatest(s, $w0 + b * $bin)) AS first_s, max(least(e, $w0 + (b + 1) * $bin)) AS last_e
  FROM spread GROUP BY ALL),
per_bin AS (
  SELECT pid, tid, depth, b, arg_max(name, (ov, name)) AS name, arg_max(first_s, (ov, name)) AS first_s,
         arg_max(last_e, (ov, name)) AS last_e, arg_max(starts, (ov, name)) AS starts,
         least(1.0, sum(ov) / $bin) AS cover
  FROM per_name GROUP BY ALL),
runs AS (SELECT *, b - row_number() OVER (PARTITION BY pid, tid, depth, name ORDER BY b) AS run FROM per_bin),
binned AS (
  SELECT pid, tid, depth, name, arg_min(first_s, b) AS start_ns, arg_max(last_e, b) AS end_ns,
         avg(cover) AS cover, sum(starts) AS ranges
  FROM runs GROUP BY pid, tid, depth, name, run)
SELECT x.pid, x.tid, x.depth, x.name, x.start_ns, x.end_ns, x.cover, x.ranges, t.lane_rank, t.thread_count
FROM (SELECT * FROM exact UNION ALL SELECT * FROM binned) x JOIN threads_ranked t USING (pid, tid)
ORDER BY t.lane_rank, x.depth, x.start_ns, x.end_ns"""


# CUDA API time per thread and kind: what the host threads spend in the driver, per bin. Queries
# (cuKernelGetName, cudaGetLastError, ...) start no work and are left out. The threads are those
# with the most API time over the whole trace, so a focus window draws the same lanes. A call's
# kind is the band (budget_causes.lane) whose api_categories hold its category, else the band
# with none listed, which takes every other category.


@functools.cache
def host_kinds() -> tuple[str, ...]:
    """The kinds of CUDA-call time the timeline draws, in order (budget_causes' lanes)."""
    return tuple(r["lane"] for r in sql_library.data_rows("budget_causes") if r["lane"])


_HOST_RANKED = """
host_ranked AS (
  SELECT pid, tid, sum(duration_ns)::BIGINT AS api_ns,
         row_number() OVER (ORDER BY sum(duration_ns) DESC, pid, tid) AS lane_rank, count(*) OVER () AS thread_count
  FROM api_calls WHERE category IS DISTINCT FROM 'query' AND pid IS NOT NULL AND tid IS NOT NULL  -- no thread: no lane
  GROUP BY pid, tid)"""

_HOST_SQL = f"""
WITH {_HOST_RANKED},
lanes AS (SELECT unnest(api_categories) AS category, lane FROM budget_causes WHERE lane IS NOT NULL),
clipped AS (
  SELECT a.pid, a.tid,
         coalesce(l.lane, (SELECT lane FROM budget_causes WHERE len(api_categories) = 0)) AS kind,
         greatest(a.start_ns, $w0) AS s, least(a.end_ns, $w1) AS e
  FROM api_calls a JOIN host_ranked r USING (pid, tid) LEFT JOIN lanes l ON l.category = a.category
  WHERE r.lane_rank <= $max_threads AND a.category IS DISTINCT FROM 'query'
    AND a.end_ns > $w0 AND a.start_ns < $w1),
binned AS (SELECT *, (s - $w0) // $bin AS b0, (e - 1 - $w0) // $bin AS b1 FROM clipped WHERE e > s),
-- most calls are shorter than a bin: those are summed by bin directly, the others spread
spread AS (SELECT pid, tid, kind, s, e, unnest(range(b0, b1 + 1)) AS b FROM binned WHERE b1 > b0)
SELECT pid, tid, kind, b0 AS b, sum(e - s) AS busy FROM binned WHERE b1 = b0 GROUP BY ALL
UNION ALL
SELECT pid, tid, kind, b, sum({_OVERLAP}) FROM spread GROUP BY ALL"""


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
    names = dict(con.execute("SELECT device_id, name FROM devices").fetchall())
    busy = con.execute("SELECT device_id, sum(duration_ns)::BIGINT FROM device_busy GROUP BY 1 ORDER BY 1").fetchall()
    devices = _per_mille(con.execute(_DEVICE_SQL, params).fetchall(), 1, params, bins)
    shared = con.execute(f"WITH {_SHARED} SELECT device_id, pid, busy FROM shared ORDER BY device_id, busy DESC, pid",
                         {"max_procs": MAX_PROCESS_ROWS}).fetchall()
    procs = {}
    if shared:
        rows = con.execute(_PROCESS_SQL, {**params, "max_procs": MAX_PROCESS_ROWS}).fetchall()
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
    source = _LANE_SOURCE["nvtx_tree" if has_table(con, "nvtx_tree") else "nvtx_ranges"]
    rows = con.execute(_NVTX_SQL.format(source=source),
                       {**params, "max_threads": MAX_THREADS, "exact_ranges": EXACT_RANGES}).fetchall()
    names = {(p, t): n for p, t, n in con.execute("SELECT pid, tid, name FROM threads").fetchall()}
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
    ranked = con.execute(f"WITH {_HOST_RANKED} SELECT pid, tid, api_ns, thread_count FROM host_ranked "
                         "WHERE lane_rank <= $max_threads ORDER BY lane_rank",
                         {"max_threads": MAX_HOST_THREADS}).fetchall()
    if not ranked:
        return [], 0
    rows = con.execute(f"SELECT pid, tid, kind, b, sum(busy) FROM ({_HOST_SQL}) GROUP BY ALL",
                       {**params, "max_threads": MAX_HOST_THREADS}).fetchall()
    per = _per_mille(rows, 3, params, bins)
    names = {(p, t): n for p, t, n in con.execute("SELECT pid, tid, name FROM threads").fetchall()}
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
    rows = con.execute("SELECT pid, count(*), list(start_ns ORDER BY start_ns) FILTER (WHERE start_ns >= $w0 "
                       "AND start_ns < $w1) FROM steps GROUP BY pid ORDER BY count(*) DESC, pid LIMIT $rows",
                       {"w0": w0, "w1": w1, "rows": MAX_STEP_ROWS}).fetchall()
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
    rows = con.execute("SELECT pid, start_ns, end_ns, startup_ns, method FROM steady_state "
                       "WHERE start_ns IS NOT NULL AND end_ns > start_ns ORDER BY pid").fetchall()
    return [SteadyWindow(pid=p, start_ns=s, end_ns=e, startup_ns=u, method=m) for p, s, e, u, m in rows]


def compute(con: duckdb.DuckDBPyConnection, bins: int = BINS, focus: tuple[int, int] | None = None) -> Timeline | None:
    """The binned timeline of an open trace; None when the trace has no window (nothing traced).
    `focus` (start, end): a window to bin again on its own (the leading steady state) when it is
    under FOCUS_SHARE of the trace."""
    started = time.perf_counter()
    w0, w1 = con.execute("SELECT start_ns, end_ns FROM trace_window").fetchone()
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
