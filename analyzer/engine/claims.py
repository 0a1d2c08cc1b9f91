"""Findings drawn on the step-time budget (ingest/sql/budget.sql).

A finding whose spec declares `claims` takes its time from one slice of the budget of its
(device, process). Its recoverable time (docs/recoverable.md) is the time the fix it names could
plausibly win: the rule's own evidence-bound estimate (its spec's `recoverable_ns` column; for idle
time the host causes, the idle time itself), never more than its slice, and None for GPU time whose
saving the trace cannot bound (a kernel already at tensor-core rate, an opaque graph replay). Its
severity then follows the critical path: a GPU-side saving on a host-bound step, or a host-side one
on a GPU-bound step, is info, with a note saying why. Findings whose slices share most of the
smaller one's time are one problem seen by several rules: they merge into the one that speaks
for the slice, the others becoming its evidence. What is left of a slice after one finding's
recoverable time is all another finding can recover from it: a nanosecond is never recovered twice.
"""

from __future__ import annotations

from typing import Any

from nsys_diagnose.engine.model import SEVERITY_RANK, BudgetRow, Finding, FindingSpec, Related, SteadyState
from nsys_diagnose.ingest import settings
from nsys_diagnose.ingest.settings import SettingValues
from nsys_diagnose.units import duration, pct


def _causes(f: Finding) -> set[str]:
    c = f.claims
    extra = f.evidence.get(c.cause_column) if c.cause_column else None
    return set(c.causes) | ({extra} if extra else set())


def _generic(f: Finding) -> bool:
    """A claim on all idle time (every cause, anywhere), as against named causes or a named place.
    All GPU time is not generic: a search's trial kernels run in every class, and are the search's."""
    return f.claims.kind == "idle" and "*" in _causes(f) and not f.claims.place


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
    causes = (("any class" if c.kind == "gpu" else "any cause") if "*" in _causes(f)
              else " or ".join(sorted(_causes(f))))
    where = f' in NVTX range "{place}"' if place else ""
    what = f"GPU time in {causes}" if c.kind == "gpu" else f"GPU idle time ({causes}{where})"
    ns = sum(r.ns for r in rows)
    return f"{duration(ns)} ({pct(100 * ns / window_ns)} of the steady state): {what}"


def _steady_of(f: Finding, steady: list[SteadyState]) -> SteadyState | None:
    pid, device = f.evidence.get("pid"), f.evidence.get("device_id")
    mine = [s for s in steady if s.pid == pid and (device is None or s.device_id == device)]
    return max(mine, key=lambda s: s.busy_ns) if mine else None


def estimate(spec: FindingSpec, evidence: dict[str, Any], impact_ns: int | None) -> int | None:
    """The rule's bound on what its fix wins, before the slice bounds it: its spec's recoverable_ns
    column where it names one (None where the row holds none); else, for idle time, the time at
    stake (the idle time a host cause makes is what removing the cause gives back); else None:
    GPU time is not all winnable, and only the rule can say which part is (a format's peak ratio,
    copies that could overlap)."""
    if spec.recoverable_ns is not None:
        value = evidence.get(spec.recoverable_ns)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return impact_ns if spec.claims is not None and spec.claims.kind == "idle" else None


def _bound(f: Finding, rows: list[BudgetRow], place: str | None, steady: list[SteadyState], min_share_pct: float) -> None:
    s = _steady_of(f, steady)
    if s is None:
        return
    ns = sum(r.ns for r in rows)
    f.claimed_ns = ns
    f.recoverable_ns = None if f.estimate_ns is None else max(0, min(f.estimate_ns, ns))
    f.claim = _describe(f, rows, place, s.window_ns)
    if f.recoverable_ns is None and ns > 0:
        f.note = ("Recoverable time not estimated: the trace does not bound what the fix wins on this "
                  f"{'GPU' if f.claims.kind == 'gpu' else 'idle'} time (docs/recoverable.md).")
    if f.severity == "info":
        return
    share = 100 * (f.recoverable_ns if f.recoverable_ns is not None else ns) / s.window_ns
    if share < min_share_pct:  # a slice this small does not limit the step
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


def apply(findings: list[Finding], budget: list[BudgetRow], steady: list[SteadyState],
          values: SettingValues | None = None) -> list[Finding]:
    """The findings bounded by the budget and merged by slice; unclaimed findings pass through.
    `values`: the run's settings (critical_path_min_pct)."""
    min_share_pct = settings.value("critical_path_min_pct", values)
    claimed = [f for f in findings if f.claims is not None and f.evidence.get("pid") is not None]
    others = [f for f in findings if f not in claimed]
    # each finding's slice, once: bounded by it here, merged by the rows it shares below
    slices: dict[int, dict[tuple, int]] = {}
    for f in claimed:
        rows, place = _slice(f, budget)
        _bound(f, rows, place, steady, min_share_pct)
        slices[id(f)] = {(r.device_id, r.pid, r.kind, r.cause, r.place): r.ns for r in rows}
    # who speaks for a slice: a warning, the one with the most time; then a note (a merged
    # warning raises it), the narrowest first: fewest causes, a rule's own cause before one
    # taken from its row (hot-kernels), every cause in a place after; last a claim on all idle.
    # Among warnings, one that names only the host's state comes after one that names a mechanism
    def key(f: Finding) -> tuple[bool, bool, bool, float, bool, int]:
        note = f.severity == "info"
        breadth = float("inf") if "*" in _causes(f) else len(_causes(f))
        return (_generic(f), note, not note and f.claims.state_only, breadth if note else 0,
                note and not f.claims.causes, -(f.recoverable_ns or 0))
    order = sorted(claimed, key=key)

    def common(a: Finding, b: Finding) -> int:
        sa, sb = slices[id(a)], slices[id(b)]
        return sum(ns for k, ns in sa.items() if k in sb)

    primaries: list[Finding] = []
    for f in order:
        # one problem when most of the smaller slice is the other's: f joins the finding it
        # shares the most time with
        shared, home = max(((common(p, f), p) for p in primaries), key=lambda t: t[0], default=(0, None))
        if not slices[id(f)]:  # a slice with no time: one finding per rule and process says it
            home = next((p for p in primaries if p.rule_id == f.rule_id and p.evidence.get("pid") == f.evidence.get("pid")
                         and not slices[id(p)]), None)
        elif home is not None and 2 * shared < min(sum(slices[id(f)].values()), sum(slices[id(home)].values())):
            home = None
        if home is None:
            primaries.append(f)
            continue
        home.related.append(Related(rule_id=f.rule_id, message=f.message, impact_ns=f.impact_ns))
        if SEVERITY_RANK[f.severity] > SEVERITY_RANK[home.severity] and (f.recoverable_ns or 0) > 0:
            home.severity = f.severity
            home.note = None
    _share_out(primaries, slices)
    return primaries + others


def _share_out(primaries: list[Finding], slices: dict[int, dict[tuple, int]]) -> None:
    """Each budget row's time recovered once: findings take their recoverable time from their
    slice's rows, the most severe and largest first, each from what the ones before left (in
    proportion to what is left in each row), so that findings on overlapping slices that did not
    merge never add up to more than the rows hold."""
    left: dict[tuple, float] = {}
    for f in sorted(primaries, key=lambda f: (-SEVERITY_RANK[f.severity], -(f.recoverable_ns or 0))):
        if not f.recoverable_ns:
            continue
        mine = slices[id(f)]
        avail = {k: left.get(k, ns) for k, ns in mine.items()}
        total = sum(avail.values())
        take = min(f.recoverable_ns, int(total))
        if take < f.recoverable_ns:
            f.note = (f"{duration(f.recoverable_ns - take)} of its estimate is recovered by a finding above "
                      "on the same GPU time or idle time, so it is not counted twice.")
            f.recoverable_ns = take
        for k, ns in avail.items():
            left[k] = ns - take * ns / total if total else ns
