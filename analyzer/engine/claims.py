"""Findings drawn on the step-time budget (analyses/sql/40_budget.sql).

A finding whose spec declares `claims` takes its time from one slice of the budget of its
(device, process): its recoverable time is its own estimate bounded by that slice. Its severity
then follows the critical path: a GPU-side saving on a host-bound step, or a host-side one on a
GPU-bound step, is info, with a note saying why. Findings over overlapping slices are one
problem seen by several rules: they merge into the most specific one, the others becoming its
evidence.
"""

from __future__ import annotations

from nsys_diagnose.engine.model import SEVERITY_RANK, BudgetRow, Finding, Related, SteadyState
from nsys_diagnose.units import duration, pct

MIN_SHARE_PCT = 2.0  # a slice under this share of the steady state does not limit the step


def _causes(f: Finding) -> set[str]:
    c = f.claims
    extra = f.evidence.get(c.cause_column) if c.cause_column else None
    return set(c.causes) | ({extra} if extra else set())


def _generic(f: Finding) -> bool:
    """A claim on every cause anywhere (all idle time), as against named causes or a named place."""
    return "*" in _causes(f) and not f.claims.place


def _slice(f: Finding, budget: list[BudgetRow]) -> tuple[list[BudgetRow], str | None]:
    c = f.claims
    causes = _causes(f)
    pid, device = f.evidence.get("pid"), f.evidence.get("device_id")
    place = f.evidence.get(c.place) if c.place else None
    rows = [b for b in budget if b.pid == pid and (device is None or b.device_id == device) and b.kind == c.kind
            and ("*" in causes or b.cause in causes) and (place is None or b.place == place)
            and b.cause != "dispatch"]
    return rows, place


def _describe(f: Finding, rows: list[BudgetRow], place: str | None, window_ns: int) -> str:
    c = f.claims
    causes = "any cause" if "*" in _causes(f) else " or ".join(sorted(_causes(f)))
    where = f' in NVTX range "{place}"' if place else ""
    what = f"GPU time in {causes}" if c.kind == "gpu" else f"GPU idle time ({causes}{where})"
    ns = sum(r.ns for r in rows)
    return f"{duration(ns)} ({pct(100 * ns / window_ns)} of the steady state): {what}"


def _steady_of(f: Finding, steady: list[SteadyState]) -> SteadyState | None:
    pid, device = f.evidence.get("pid"), f.evidence.get("device_id")
    mine = [s for s in steady if s.pid == pid and (device is None or s.device_id == device)]
    return max(mine, key=lambda s: s.busy_ns) if mine else None


def _bound(f: Finding, budget: list[BudgetRow], steady: list[SteadyState]) -> None:
    s = _steady_of(f, steady)
    if s is None:
        return
    rows, place = _slice(f, budget)
    ns = sum(r.ns for r in rows)
    f.recoverable_ns = min(f.impact_ns, ns) if f.impact_ns is not None else ns
    f.claim = _describe(f, rows, place, s.window_ns)
    if f.severity == "info":
        return
    share = 100 * f.recoverable_ns / s.window_ns
    if share < MIN_SHARE_PCT:
        f.severity = "info"
        f.note = (f"At most {duration(f.recoverable_ns)} of it ({pct(share)} of the steady state) is on the "
                  "step's critical path.")
    elif f.claims.kind == "gpu" and s.bound == "host-bound" and not f.claims.host_waits:
        f.severity = "info"
        f.note = (f"A GPU-side saving: the step is host-bound (GPU busy {pct(s.busy_pct)} of the steady state), "
                  f"so it will not shorten the step until the host cause is fixed.")
    elif f.claims.kind == "idle" and s.bound == "gpu-bound":
        f.severity = "info"
        f.note = (f"A host-side saving: the GPU is busy {pct(s.busy_pct)} of the steady state, so the GPU, "
                  "not the host, sets the pace.")


def _overlap(a: Finding, b: Finding) -> bool:
    ca, cb = a.claims, b.claims
    if a.evidence.get("pid") != b.evidence.get("pid") or ca.kind != cb.kind:
        return False
    da, db = a.evidence.get("device_id"), b.evidence.get("device_id")
    if da is not None and db is not None and da != db:
        return False
    pa = a.evidence.get(ca.place) if ca.place else None
    pb = b.evidence.get(cb.place) if cb.place else None
    if pa is not None and pb is not None and pa != pb:
        return False
    a_causes, b_causes = _causes(a), _causes(b)
    return "*" in a_causes or "*" in b_causes or bool(a_causes & b_causes)


def apply(findings: list[Finding], budget: list[BudgetRow], steady: list[SteadyState]) -> list[Finding]:
    """The findings bounded by the budget and merged by slice; unclaimed findings pass through."""
    claimed = [f for f in findings if f.claims is not None and f.evidence.get("pid") is not None]
    others = [f for f in findings if f not in claimed]
    for f in claimed:
        _bound(f, budget, steady)
    # who speaks for a slice: a warning, the one with the most time; then a note (a merged
    # warning raises it), one naming its causes before one on every cause in a place; last a
    # claim on all idle time
    def key(f: Finding) -> tuple[bool, bool, bool, int]:
        note = f.severity == "info"
        return _generic(f), note, note and "*" in _causes(f), -(f.recoverable_ns or 0)
    order = sorted(claimed, key=key)
    primaries: list[Finding] = []
    for f in order:
        home = next((p for p in primaries if _overlap(p, f)), None)
        if home is None:
            primaries.append(f)
            continue
        home.related.append(Related(rule_id=f.rule_id, message=f.message, impact_ns=f.impact_ns))
        if SEVERITY_RANK[f.severity] > SEVERITY_RANK[home.severity] and (f.recoverable_ns or 0) > 0:
            home.severity = f.severity
            home.note = None
    return primaries + others
