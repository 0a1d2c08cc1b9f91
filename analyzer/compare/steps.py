"""Per-step times of a run, from the shared `steps` and `steady_state` tables (sql/20_phases.sql).

A step's time here is the period between the completions of consecutive steps, where step i
completes when the host has moved on to step i+1 *and* the GPU has finished the work launched
in step i. This is what throughput sees, whichever side is the bottleneck:
- CPU-bound (launch overhead, data loading): the host's step boundaries set the pace;
- GPU-bound with the host running ahead (it may queue every step and synchronize once at the
  end): the host ranges are short and meaningless, the GPU's completions set the pace.
GPU work belongs to the step in which the host launched it (its API call's start), across all
threads of the process (PyTorch runs backward on its own thread). Steps found from a marker
kernel (source 'repeated', name 'kernel ...') are on the GPU clock: their work is assigned by
GPU start time instead.

Start-up is excluded: only steps inside the steady-state window are timed (the first step
pays for lazy module loading, cuDNN/cuBLAS heuristics, allocator warm-up). The last step is
not timed either: nothing bounds it but the end of the trace (teardown, a final sync).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

STEP_SQL = """
WITH s AS (
  SELECT pid, step, name, source, start_ns, end_ns,
         lead(start_ns) OVER (PARTITION BY pid ORDER BY step) AS next_start_ns
  FROM steps),
clock AS (SELECT pid, bool_or(source = 'repeated' AND name LIKE 'kernel %') AS gpu_clock FROM steps GROUP BY pid),
ops AS (
  SELECT g.pid, g.end_ns,
         CASE WHEN c.gpu_clock THEN g.start_ns ELSE coalesce(g.launch_start_ns, g.start_ns) END AS t
  FROM gpu_activity g JOIN clock c USING (pid)),
owned AS (
  SELECT s.pid, s.step, max(o.end_ns) AS gpu_end_ns, count(*) AS ops
  FROM ops o ASOF JOIN s ON o.pid = s.pid AND o.t >= s.start_ns
  WHERE o.t < s.next_start_ns
  GROUP BY ALL)
SELECT s.pid, s.step, s.name, s.source, s.start_ns, s.next_start_ns, o.gpu_end_ns, coalesce(o.ops, 0),
       c.gpu_clock
FROM s LEFT JOIN owned o USING (pid, step) JOIN clock c USING (pid)
ORDER BY s.pid, s.step
"""


@dataclass
class StepSeries:
    """The timed steps of one process."""

    pid: int
    name: str                    # the step's NVTX range (or marker) name
    source: str                  # how the steps were found: nvtx, repeated
    total_steps: int             # steps found, timed or not
    periods_ns: list[int] = field(default_factory=list)  # one per timed step
    first_step: int = 0          # number of the first timed step
    window_start_ns: int = 0     # host (or GPU) time where the first timed step starts
    window_end_ns: int = 0       # where the step after the last timed one starts
    done_start_ns: int = 0       # completion of the step before the first timed one
    done_end_ns: int = 0         # completion of the last timed step
    gpu_clock: bool = False

    @property
    def timed(self) -> int:
        return len(self.periods_ns)

    @property
    def steps(self) -> list[int]:
        return list(range(self.first_step, self.first_step + self.timed))


def has_step_tables(con: duckdb.DuckDBPyConnection) -> bool:
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return {"steps", "steady_state"} <= names


def step_series(con: duckdb.DuckDBPyConnection) -> list[StepSeries]:
    """Timed steps per process, ordered by when each process's steps begin."""
    if not has_step_tables(con):
        return []
    steady = dict(con.execute("SELECT pid, start_ns FROM steady_state WHERE method = 'steps'").fetchall())
    rows = con.execute(STEP_SQL).fetchall()
    by_pid: dict[int, list] = {}
    for r in rows:
        by_pid.setdefault(r[0], []).append(r)
    out = []
    for pid, steps in by_pid.items():
        out.append(_series(pid, steps, steady.get(pid)))
    return sorted(out, key=lambda s: (s.window_start_ns or 0, s.pid))


def _series(pid: int, steps: list, steady_start: int | None) -> StepSeries:
    name, source, gpu_clock = steps[0][2], steps[0][3], bool(steps[0][8])
    series = StepSeries(pid=pid, name=name, source=source, total_steps=len(steps), gpu_clock=gpu_clock)
    done: list[int | None] = []
    last = None
    for (_, _, _, _, start, next_start, gpu_end, _, _) in steps:
        if next_start is None:  # the last step: unbounded
            done.append(None)
            continue
        d = max(gpu_end or 0, next_start)
        last = d if last is None else max(last, d)  # completions never go back in time
        done.append(last)
    for i in range(1, len(steps)):
        step_no, start = steps[i][1], steps[i][4]
        if done[i] is None or done[i - 1] is None:
            continue
        if steady_start is not None and start < steady_start:
            continue
        if not series.periods_ns:
            series.first_step, series.window_start_ns, series.done_start_ns = step_no, start, done[i - 1]
        series.periods_ns.append(done[i] - done[i - 1])
        series.window_end_ns, series.done_end_ns = steps[i][5], done[i]
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
