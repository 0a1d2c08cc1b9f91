"""The step-time budget and the steady-state verdict (ingest/sql/budget.sql) as report models."""

from __future__ import annotations

import functools

import duckdb
from nsys_diagnose.engine.model import BudgetRow, SteadyState
from nsys_diagnose.ingest import sql_library
from nsys_diagnose.units import duration, pct

SUMMARY_PARTS = 4        # slices named in the one-line budget
SUMMARY_MIN_PCT = 1.0    # smaller slices are left out of it



@functools.cache
def labels() -> dict[tuple[str, str], str]:
    """(kind, cause) -> the cause in the report's words (budget_causes, ingest/sql/causes.sql)."""
    return {(r["kind"], r["cause"]): r["label"] for r in sql_library.data_rows("budget_causes")}


def cause_words(kind: str, cause: str) -> str:
    """'idle: launch overhead (...)' for an idle cause; a GPU class as it is."""
    label = labels().get((kind, cause), cause)
    return label if kind == "gpu" else f"idle: {label}"


def idle_words(cause: str, place: str | None) -> str:
    """An idle cause in the report's words, with the NVTX range it sits in."""
    where = f' in "{place}"' if place else ""
    return f"{labels().get(('idle', cause), cause)}{where}"


def slice_words(kind: str, cause: str, place: str | None) -> str:
    return cause_words(kind, cause) if kind == "gpu" else f"idle: {idle_words(cause, place)}"


def compute(con: duckdb.DuckDBPyConnection) -> tuple[list[BudgetRow], list[SteadyState]]:
    cur = con.execute(sql_library.query("report_budget"))
    names = [d[0] for d in cur.description]
    budget = [BudgetRow(**dict(zip(names, r))) for r in cur.fetchall()]
    cur = con.execute(sql_library.query("report_steady_summary"))
    names = [d[0] for d in cur.description]
    steady = []
    for r in cur.fetchall():
        row = dict(zip(names, r))
        row["verdict"] = verdict(row)
        mine = [b for b in budget if b.device_id == row["device_id"] and b.pid == row["pid"]]
        steady.append(SteadyState(**row, summary=summary(row, mine)))
    return budget, steady


def _kernels(cls: str) -> str:
    """A GPU class as the kernels it holds: 'tensor-core math kernels', 'other kernels', 'CUDA graph replays'."""
    return cls if cls.endswith(("kernels", "replays", "copies", "memsets")) else f"{cls} kernels"


def verdict(s: dict) -> str | None:
    """What fills the step, in words, from steady_summary's verdict columns (docs/verdict.md):
    'copy-bound: Host-to-Device copies from pageable memory hold 97.2 % of the steady state'."""
    cls, cause, detail, share = s.get("verdict_class"), s.get("verdict_cause"), s.get("verdict_detail"), s.get("verdict_pct")
    if cls is None or cause is None:
        return cls
    held = f"hold {pct(share)} of the steady state"
    if cls == "kernel-bound":
        return f"kernel-bound: {_kernels(cause)} {held}"
    if cls == "copy-bound":
        memory = f" from {detail} host memory" if detail and cause == "Host-to-Device" else \
            f" to {detail} host memory" if detail else ""
        most = "memsets" if cause == "memsets" else f"{cause}{memory}"
        return f"copy-bound: copies and memsets {held}, most of it {most}"
    if cls == "host-bound":
        return (f"host-bound: the GPU sits idle through {idle_words(cause, detail)}, "
                f"{pct(share)} of the steady state")
    idle = ("gpu", cause) not in labels()
    what = f"idle on {idle_words(cause, detail)}" if idle else _kernels(cause)
    return (f"mixed: GPU busy {pct(s['busy_pct'])}, idle {pct(100 - s['busy_pct'])}; "
            f"the largest slice is {what}, {pct(share)} of the steady state")


def summary(s: dict, rows: list[BudgetRow]) -> str:
    """'host-bound: the GPU sits idle through ... (12 steps, ...; GPU busy 3.3 % of the ...): 96.7 % idle: host code in "Data Loading", ...'"""
    parts = [f"{pct(b.pct)} {slice_words(b.kind, b.cause, b.place)}" for b in rows if b.pct >= SUMMARY_MIN_PCT]
    steps = f"{s['steps']} steps, median {duration(s['step_median_ns'])}; " if s.get("steps") and s.get("step_median_ns") else ""
    return (f"{s.get('verdict') or s['bound']} ({steps}GPU busy {pct(s['busy_pct'])} of the {duration(s['window_ns'])} "
            "steady state): " + (", ".join(parts[:SUMMARY_PARTS]) or "no slice over 1 %"))


def primary(steady: list[SteadyState]) -> SteadyState | None:
    """The steady state the report leads with: the (device, process) with the most GPU work."""
    return max(steady, key=lambda s: (s.busy_ns, s.window_ns), default=None)
