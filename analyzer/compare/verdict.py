"""From step periods to a verdict: improved, regressed, no-change, inconclusive.

The effect is the change of the mean step period over the steady state, the inverse of the
throughput (steps per second): what a user means by "training got 20 % faster". A change is
called only when it is outside the noise *and* large enough to matter:
- the block-bootstrap interval of the mean period's relative change excludes 0, and
- the mean period moved by at least `min_effect_pct`.
Where the interval holds 0 the verdict is no-change only for a small effect: a mean that moved
by `large_effect_pct` or more inside an interval that holds 0 (-20 %, interval -55 % to +26 %:
bursty loader waits over a few steps) is inconclusive, with the effect and its interval, never
no-change. (Not a margin on the interval itself: a run against itself, effect 0, has an interval
of a few % where every few steps sync, and is no-change.) With fewer than `min_steps` timed steps on either side it is inconclusive too: a
handful of steps cannot tell a change from step-to-step jitter.

The median step and the Mann-Whitney rank test are reported beside it, never decisive: when
batches arrive in bursts (most steps find one ready, every few steps one waits a second), the
typical step can shrink 98 % while the run gets 26 % faster.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from nsys_diagnose.compare.distribution import Distribution, describe
from nsys_diagnose.compare.stats import fmean, mad, mann_whitney, mean_change_ci
from nsys_diagnose.compare.steps import StepSeries

METRIC = "mean_step_period_ns"


@dataclass(frozen=True)
class Settings:
    min_effect_pct: float = 1.0
    alpha: float = 0.05
    confidence: float = 0.95
    resamples: int = 2000
    min_steps: int = 5
    assume_comparable: bool = False
    large_effect_pct: float = 5.0


@dataclass
class StepComparison:
    """BEFORE's and AFTER's step periods of one process (pids differ between runs)."""

    before_pid: int
    after_pid: int
    step_name: str
    metric: str                  # what change_pct is the change of: METRIC
    timeline: str                # gpu (first GPU operations of the steps) or host (host step starts)
    before_steps: int
    after_steps: int
    before_mean_ns: float
    after_mean_ns: float
    change_pct: float            # of the mean period; the verdict's figure
    ci_low_pct: float | None
    ci_high_pct: float | None
    throughput_ratio: float | None  # AFTER's steps per second over BEFORE's
    before_median_ns: float
    after_median_ns: float
    median_change_pct: float
    before_mad_ns: float
    after_mad_ns: float
    before_host_mean_ns: float   # the same steps between the host's step starts
    after_host_mean_ns: float
    before_distribution: Distribution
    after_distribution: Distribution
    p_value: float | None        # rank test of the step periods (reported, not decisive)
    test: str | None
    prob_after_faster: float | None
    verdict: str
    reason: str

    @property
    def delta_ns(self) -> float:
        return self.after_mean_ns - self.before_mean_ns


def _timeline(a: StepSeries, b: StepSeries) -> str:
    return a.timeline if a.timeline == b.timeline else f"{a.timeline} / {b.timeline}"


def compare_steps(a: StepSeries, b: StepSeries, s: Settings) -> StepComparison:
    mean_a, mean_b = fmean(a.periods_ns), fmean(b.periods_ns)
    med_a, med_b = median(a.periods_ns), median(b.periods_ns)
    base: dict[str, Any] = dict(before_pid=a.pid, after_pid=b.pid, step_name=a.name if a.name == b.name else f"{a.name} / {b.name}",
                metric=METRIC, timeline=_timeline(a, b), before_steps=a.timed, after_steps=b.timed,
                before_mean_ns=mean_a, after_mean_ns=mean_b, change_pct=(mean_b / mean_a - 1) * 100 if mean_a else 0.0,
                throughput_ratio=mean_a / mean_b if mean_b else None,
                before_median_ns=med_a, after_median_ns=med_b,
                median_change_pct=(med_b / med_a - 1) * 100 if med_a else 0.0,
                before_mad_ns=mad(a.periods_ns), after_mad_ns=mad(b.periods_ns),
                before_host_mean_ns=fmean(a.host_periods_ns), after_host_mean_ns=fmean(b.host_periods_ns),
                before_distribution=describe(a.periods_ns), after_distribution=describe(b.periods_ns))
    change = base["change_pct"]
    if min(a.timed, b.timed) < s.min_steps:
        return StepComparison(**base, ci_low_pct=None, ci_high_pct=None, p_value=None, test=None,
                              prob_after_faster=None, verdict="inconclusive",
                              reason=f"too few steps to tell a change from noise: {a.timed} timed steps before, "
                                     f"{b.timed} after (at least {s.min_steps} each are needed)")
    ci = mean_change_ci(a.periods_ns, b.periods_ns, level=s.confidence, resamples=s.resamples)
    rank = mann_whitney(a.periods_ns, b.periods_ns)
    if ci.excludes_zero() and change >= s.min_effect_pct:
        verdict, reason = "regressed", "the run is slower, outside the noise"
    elif ci.excludes_zero() and change <= -s.min_effect_pct:
        verdict, reason = "improved", "the run is faster, outside the noise"
    elif ci.excludes_zero():
        verdict, reason = "no-change", (f"the change is outside the noise but smaller than {s.min_effect_pct:g} % "
                                        "(--min-effect)")
    elif abs(change) >= s.large_effect_pct:
        verdict, reason = "inconclusive", (
            f"the interval is too wide to tell: the mean moved {change:+.1f} % (at least {s.large_effect_pct:g} %, "
            f"--large-effect), but anything from {ci.low * 100:+.1f} % to {ci.high * 100:+.1f} % fits the "
            "step-to-step noise; more steps (a longer capture) narrow it")
    else:
        verdict, reason = "no-change", "no change outside the step-to-step noise"
    return StepComparison(**base, ci_low_pct=ci.low * 100, ci_high_pct=ci.high * 100, p_value=rank.p_value,
                          test=f"mann-whitney-{rank.method}",
                          prob_after_faster=rank.prob_after_smaller, verdict=verdict, reason=reason)


def overall(pairs: list[StepComparison]) -> tuple[str, StepComparison | None]:
    """One verdict for the run: a regression in any process wins (a CI gate must see it),
    then an improvement; then inconclusive where any process could not be judged (no-change
    only when every process rules a change out); inconclusive when no process could be judged."""
    for wanted in ("regressed", "improved", "inconclusive", "no-change"):
        hits = [p for p in pairs if p.verdict == wanted]
        if hits:
            return wanted, max(hits, key=lambda p: abs(p.change_pct))
    return "inconclusive", (pairs[0] if pairs else None)
