"""The report's headline: one sentence of at most 30 words, in the order a user acts on it.

    verdict: cause where, cost per step (share). Fix: fix, gain.
    Host-bound (GPU busy 10.7 %): launch overhead in "train_step", 18.2 ms a step (80.2 %).
    Fix: capture the step in a CUDA graph, steps up to 5x faster.

The words of the cause, its place and its fix come from the top finding's rule
(engine/headlines.py renders them from the rule's `headline:`); the verdict from the budget's
steady state of the finding's (device, process); the cost and the gain from the finding's figures
over that steady state. This module only orders, joins and, past 30 words, drops the least needed
part (the pid qualifier, then the gain, then the place: where to act beats how much faster). The detail is in the finding.
"""

from __future__ import annotations

from nsys_diagnose.engine.headlines import default_cause
from nsys_diagnose.engine.model import Coverage, Finding, Metrics, SteadyState
from nsys_diagnose.units import duration, pct

MAX_WORDS = 30
ORDER = ("verdict", "cause", "where", "who", "cost", "fix", "gain")
DROP_FIRST = ("who", "gain", "where")  # what goes, in this order, when the headline is too long
BOUND_WORDS = {"gpu-bound": "GPU-bound", "host-bound": "Host-bound", "mixed": "Mixed",
               "kernel-bound": "Kernel-bound", "copy-bound": "Copy-bound"}


def words(text: str) -> int:
    return len(text.split())


def verdict(s: SteadyState | None, metrics: Metrics) -> str:
    """The steady state's verdict and GPU busy share; the whole trace's share without one."""
    if s is None:
        return f"GPU busy {pct(metrics.gpu_utilization_pct)} of the trace"
    phrase = BOUND_WORDS.get(s.verdict_class or s.bound, s.verdict_class or s.bound)  # docs/verdict.md
    return f"{phrase[:1].upper()}{phrase[1:]} (GPU busy {pct(s.busy_pct)})"


def steady_of(f: Finding, steady: list[SteadyState], lead: SteadyState | None) -> SteadyState | None:
    """The steady state a finding is about: its (device, process)'s, else its process's, else the lead."""
    pid, dev = f.evidence.get("pid"), f.evidence.get("device_id")
    return (next((s for s in steady if s.pid == pid and s.device_id == dev), None)
            or next((s for s in steady if s.pid == pid), None) or lead)


def speedup(window_ns: int, recoverable_ns: int) -> str:
    x = window_ns / max(window_ns - recoverable_ns, window_ns / 100)  # at most 100x: a bound, not a promise
    return f"{x:.2g}x" if x < 10 else f"{x:.0f}x"


def gap_words(coverage: Coverage) -> str:
    """What the capture lacks, short: each gap's message to its first colon when all in full are too long."""
    full = " ".join(g.message for g in coverage.gaps)
    if words(full) <= MAX_WORDS:
        return full
    return " ".join(g.message.split(": ", 1)[0].rstrip(".") + "." for g in coverage.gaps)


def parts(findings: list[Finding], steady: list[SteadyState], metrics: Metrics, coverage: Coverage, *,
          lead: SteadyState | None) -> list[tuple[str, str]]:
    """The headline's parts, (name, text) in ORDER; compose() joins them. "No bottleneck found" only
    where the rules could look (docs/coverage.md): a capture with nothing to diagnose says what is
    missing, and one looked at in part says so before its notes."""
    if coverage.status == "could-not-look":
        return [("gaps", gap_words(coverage))]
    warned = bool(findings) and findings[0].severity != "info"
    if coverage.status == "partial" and not warned:
        return [("gaps", f"Looked in part: {gap_words(coverage)} In what was captured no rule raised a warning "
                         f"({verdict(lead, metrics)})")]
    top = findings[0] if findings else None
    if top is None:
        return [("verdict", f"No bottleneck found: {verdict(lead, metrics)}"), ("cause", "no rule fired")]
    s = steady_of(top, steady, lead)
    h = top.headline
    cause = h.cause if h else default_cause(top.rule_id.replace("-", " "))
    out = [("verdict", verdict(s, metrics)), ("cause", cause)]
    if h and h.where:
        out.append(("where", h.where))
    who = []
    if len({p.pid for p in metrics.processes}) > 1 and top.evidence.get("pid") is not None:
        who.append(f"pid {top.evidence['pid']}")
    if len(metrics.devices) > 1 and top.evidence.get("device_id") is not None:
        who.append(f"GPU {top.evidence['device_id']}")
    if who:
        out.append(("who", f"({', '.join(who)})"))
    if top.severity == "info":  # only notes: say so first, so a healthy run does not read as a problem
        return [("verdict", f"No bottleneck found: {verdict(s, metrics)} and no rule raised a warning"),
                *[(n, t) for n, t in out if n != "verdict"]]
    cost = h.cost_ns if h else top.impact_ns
    if cost:
        # a cost drawn on the steady state's budget (claimed), whether or not its gain is bounded
        if top.claim is not None and s is not None and s.window_ns:
            # a rule's time over the whole trace (a kernel's every launch) is more than its steady slice
            cost = min(cost, top.claimed_ns) if top.claimed_ns is not None else cost
            share = f"{pct(100 * cost / s.window_ns)}"
            if s.steps and s.steps >= 2:
                out.append(("cost", f"{duration(cost / s.steps)} a step ({share})"))
            else:
                out.append(("cost", f"{duration(cost)} ({share} of the steady state)"))
        elif metrics.span_ns:
            out.append(("cost", f"{duration(cost)} ({pct(100 * cost / metrics.span_ns)} of the trace)"))
    if h and h.fix:
        out.append(("fix", h.fix))
    if top.recoverable_ns and s is not None and s.window_ns:
        # under a tenth of the window a factor rounds to "1x": the share says how little is won
        gain = (f"{pct(100 * top.recoverable_ns / s.window_ns)} shorter" if top.recoverable_ns < s.window_ns / 10
                else f"{speedup(s.window_ns, top.recoverable_ns)} faster")
        out.append(("gain", f"{'steps ' if s.steps else ''}up to {gain}"))
    return out


def compose(named: list[tuple[str, str]]) -> str:
    """`verdict: cause where (who) cost. Fix: fix, gain.` at most MAX_WORDS words."""
    named = list(named)
    for drop in DROP_FIRST:
        if words(_join(named)) <= MAX_WORDS:
            break
        named = [(n, t) for n, t in named if n != drop]
    text = _join(named)
    if words(text) > MAX_WORDS:  # a long place or fix in a custom rule: cut, the finding has it all
        text = " ".join(text.split()[:MAX_WORDS - 1]) + " ..."
    return text


def _join(named: list[tuple[str, str]]) -> str:
    got = dict(named)
    if "gaps" in got:
        return got["gaps"].rstrip(".") + "."
    head = got["verdict"]
    place = " ".join(got[n] for n in ("cause", "where", "who") if n in got)
    body = f"{place}, {got['cost']}" if "cost" in got else place
    if head.startswith("No bottleneck found") and "rule fired" not in body:  # notes only
        first = f"{head}. Most notable: {body}" if body else head
    else:
        first = f"{head}: {body}" if body else head
    if "fix" in got:
        second = f"Fix: {got['fix']}" + (f", {got['gain']}" if "gain" in got else "")
    elif "gain" in got:
        second = got["gain"][:1].upper() + got["gain"][1:]
    else:
        return first + "."
    return f"{first}. {second}."


def headline(findings: list[Finding], steady: list[SteadyState], metrics: Metrics, coverage: Coverage, *,
             lead: SteadyState | None) -> str:
    return compose(parts(findings, steady, metrics, coverage, lead=lead))
