"""Per-step periods of a run, from the shared `step_times` and `steady_state` tables
(ingest/sql/step_times.sql, phases.sql); the budget's step time uses the same steps.

A step's time here is the period between the first GPU operations of consecutive steps: the
step time on the GPU's timeline (docs: critical-path.md, "The two timelines"). A step's GPU
work is what the host launched inside it, found through the launch calls' correlation ids
(`launch_start_ns` of `gpu_activity`), across all threads of the process (PyTorch runs
backward on its own thread). This is the pace throughput sees whichever side is the bottleneck:
- host-bound (launch overhead, data loading): each step's first kernel follows its launch by
  a few microseconds, so the GPU's period is the host's;
- GPU-bound with the host running ahead (it may queue every step and synchronize once at the
  end): the host's step starts are microseconds apart and say only how fast it enqueues; the
  GPU starts step i+1 when it has worked through step i.
The mean period over the timed steps telescopes: it is the window from the first timed step's
first GPU operation to the next step's after the last timed one, divided by the steps.

Steps found from a marker kernel (source 'repeated', name 'kernel ...') are on the GPU clock
already: their work is assigned by GPU start time. A process with a step that launched no GPU
work (host-only steps) is timed between the host's step starts instead (`timeline` 'host').

Start-up is excluded: only steps inside the steady-state window are timed (the first step
pays for lazy module loading, cuDNN/cuBLAS heuristics, allocator warm-up). The last step is
not timed either: no step follows it to bound its period.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
from nsys_diagnose.ingest.database import has_table
from nsys_diagnose.ingest.sql_library import query


@dataclass
class StepSeries:
    """The timed steps of one process."""

    pid: int
    name: str                    # the step's NVTX range (or marker) name
    source: str                  # how the steps were found: nvtx, repeated
    total_steps: int             # steps found, timed or not
    periods_ns: list[int] = field(default_factory=list)  # one per timed step, on `timeline`
    host_periods_ns: list[int] = field(default_factory=list)  # the same steps between host starts
    timeline: str = "gpu"        # gpu: between first GPU operations; host: between host step starts
    first_step: int = 0          # number of the first timed step
    window_start_ns: int = 0     # where the first timed step starts, on `timeline`
    window_end_ns: int = 0       # where the step after the last timed one starts, on `timeline`
    gpu_clock: bool = False

    @property
    def timed(self) -> int:
        return len(self.periods_ns)

    @property
    def steps(self) -> list[int]:
        return list(range(self.first_step, self.first_step + self.timed))


def has_step_tables(con: duckdb.DuckDBPyConnection) -> bool:
    return all(has_table(con, name) for name in ("steps", "steady_state", "step_times"))


def step_series(con: duckdb.DuckDBPyConnection) -> list[StepSeries]:
    """Timed steps per process, ordered by when each process's steps begin."""
    if not has_step_tables(con):
        return []
    steady = dict(con.execute(query("compare_steady_starts")).fetchall())
    by_pid: dict[int, list] = {}
    for r in con.execute(query("compare_steps")).fetchall():  # ingest/sql/queries/compare.sql
        by_pid.setdefault(r[0], []).append(r)
    out = [_series(pid, rows, steady.get(pid)) for pid, rows in by_pid.items()]
    return sorted(out, key=lambda s: (s.window_start_ns or 0, s.pid))


def _series(pid: int, rows: list, steady_start: int | None) -> StepSeries:
    name, source, gpu_clock = rows[0][2], rows[0][3], bool(rows[0][7])
    series = StepSeries(pid=pid, name=name, source=source, total_steps=len(rows), gpu_clock=gpu_clock)
    # step k is timed when it is in the steady state and a step follows it
    timed = [k for k in range(1, len(rows) - 1) if steady_start is None or rows[k][4] >= steady_start]
    if not timed:
        return series
    host = [r[4] for r in rows]
    bounds = range(timed[0], timed[-1] + 2)  # the timed steps' starts and the one after the last
    on_gpu = all(rows[k][6] is not None for k in bounds)
    starts = host
    if on_gpu:
        starts = [0] * len(rows)
        latest = None
        for k in bounds:  # a later step's first operation never precedes an earlier one's
            latest = rows[k][6] if latest is None else max(latest, rows[k][6])
            starts[k] = latest
    series.timeline = "gpu" if on_gpu else "host"
    series.first_step = rows[timed[0]][1]
    series.periods_ns = [starts[k + 1] - starts[k] for k in timed]
    series.host_periods_ns = [host[k + 1] - host[k] for k in timed]
    series.window_start_ns, series.window_end_ns = starts[timed[0]], starts[timed[-1] + 1]
    return series


def match(before: list[StepSeries], after: list[StepSeries]) -> list[tuple[StepSeries, StepSeries]]:
    """Pair the processes of two runs (pids differ between runs): by order of their first
    timed step, preferring a partner whose steps carry the same name."""
    pairs, free = [], list(after)
    for s in before:
        same = [t for t in free if t.name == s.name] or free
        if not same:
            break
        partner = same[0]
        free.remove(partner)
        pairs.append((s, partner))
    return pairs
