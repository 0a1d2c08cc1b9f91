"""The step-time budget and the steady-state verdict (ingest/sql/budget.sql) as report models."""

from __future__ import annotations

import duckdb
from nsys_diagnose.engine.model import BudgetRow, SteadyState
from nsys_diagnose.units import duration, pct

SUMMARY_PARTS = 4        # slices named in the one-line budget
SUMMARY_MIN_PCT = 1.0    # smaller slices are left out of it

IDLE_WORDS = {
    "host code": "host code", "untraced host code": "untraced host code (outside NVTX ranges and traced calls)",
    "launch": "launch overhead (issuing many short operations)", "sync": "waiting after synchronizations",
    "OS wait": "OS waits", "copy": "copies and memsets (issuing them, waiting for them)", "allocation": "memory allocation",
    "module loading": "module loading", "other CUDA calls": "other CUDA calls",
    "no GPU work queued": "no GPU work queued", "other processes": "other processes' GPU work",
    "dispatch": "dispatch gaps between queued operations",
}


def slice_words(kind: str, cause: str, place: str | None) -> str:
    if kind == "gpu":
        return cause
    where = f' in "{place}"' if place else ""
    return f"idle: {IDLE_WORDS.get(cause, cause)}{where}"


def compute(con: duckdb.DuckDBPyConnection) -> tuple[list[BudgetRow], list[SteadyState]]:
    cur = con.execute("SELECT device_id, pid, kind, cause, place, ns, pct FROM budget "
                      "ORDER BY device_id, pid, ns DESC, kind, cause, place")
    names = [d[0] for d in cur.description]
    budget = [BudgetRow(**dict(zip(names, r))) for r in cur.fetchall()]
    cur = con.execute("SELECT device_id, pid, start_ns, end_ns, window_ns, steps, step_median_ns, step_mean_ns, "
                      "busy_ns, busy_pct, idle_ns, bound, method FROM steady_summary ORDER BY device_id, pid")
    names = [d[0] for d in cur.description]
    steady = []
    for r in cur.fetchall():
        row = dict(zip(names, r))
        mine = [b for b in budget if b.device_id == row["device_id"] and b.pid == row["pid"]]
        steady.append(SteadyState(**row, summary=summary(row, mine)))
    return budget, steady


def summary(s: dict, rows: list[BudgetRow]) -> str:
    """'host-bound: 96.7 % idle: host code in "Data Loading", 2.1 % copies, ...'"""
    parts = [f"{pct(b.pct)} {slice_words(b.kind, b.cause, b.place)}" for b in rows if b.pct >= SUMMARY_MIN_PCT]
    steps = f"{s['steps']} steps, median {duration(s['step_median_ns'])}; " if s.get("steps") and s.get("step_median_ns") else ""
    return (f"{s['bound']} ({steps}GPU busy {pct(s['busy_pct'])} of the {duration(s['window_ns'])} steady state): "
            + (", ".join(parts[:SUMMARY_PARTS]) or "no slice over 1 %"))


def primary(steady: list[SteadyState]) -> SteadyState | None:
    """The steady state the report leads with: the (device, process) with the most GPU work."""
    return max(steady, key=lambda s: (s.busy_ns, s.window_ns), default=None)
