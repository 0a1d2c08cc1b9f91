"""From step-time samples to a verdict: improved, regressed, no-change, inconclusive.

A change is called only when it is outside the noise *and* large enough to matter:
- the bootstrap interval of the median's relative change excludes 0, and
- the Mann-Whitney rank test rejects "same distribution" at `alpha`, and
- the median moved by at least `min_effect_pct`.
Otherwise the verdict is no-change; the interval says how large a change could still hide in
the noise. With fewer than `min_steps` timed steps on either side it is inconclusive: a
handful of steps cannot tell a change from step-to-step jitter.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from nsys_diagnose.compare.stats import mad, mann_whitney, median_change_ci
from nsys_diagnose.compare.steps import StepSeries


@dataclass(frozen=True)
class Settings:
    min_effect_pct: float = 1.0
    alpha: float = 0.05
    confidence: float = 0.95
    resamples: int = 2000
    min_steps: int = 5
    assume_comparable: bool = False


@dataclass
class StepComparison:
    """BEFORE's and AFTER's step times of one process (pids differ between runs)."""

    before_pid: int
    after_pid: int
    step_name: str
    before_steps: int
    after_steps: int
    before_median_ns: float
    after_median_ns: float
    before_mad_ns: float
    after_mad_ns: float
    change_pct: float
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    test: str | None
    prob_after_faster: float | None
    verdict: str
    reason: str

    @property
    def delta_ns(self) -> float:
        return self.after_median_ns - self.before_median_ns


def compare_steps(a: StepSeries, b: StepSeries, s: Settings) -> StepComparison:
    ma, mb = median(a.periods_ns), median(b.periods_ns)
    change = (mb / ma - 1) * 100 if ma else 0.0
    base = dict(before_pid=a.pid, after_pid=b.pid, step_name=a.name if a.name == b.name else f"{a.name} / {b.name}",
                before_steps=a.timed, after_steps=b.timed, before_median_ns=ma, after_median_ns=mb,
                before_mad_ns=mad(a.periods_ns), after_mad_ns=mad(b.periods_ns), change_pct=change)
    if min(a.timed, b.timed) < s.min_steps:
        return StepComparison(**base, ci_low_pct=None, ci_high_pct=None, p_value=None, test=None,
                              prob_after_faster=None, verdict="inconclusive",
                              reason=f"too few steps to tell a change from noise: {a.timed} timed steps before, "
                                     f"{b.timed} after (at least {s.min_steps} each are needed)")
    ci = median_change_ci(a.periods_ns, b.periods_ns, level=s.confidence, resamples=s.resamples)
    rank = mann_whitney(a.periods_ns, b.periods_ns)
    lo, hi = ci.low * 100, ci.high * 100
    significant = ci.excludes_zero() and rank.p_value < s.alpha
    if significant and change >= s.min_effect_pct:
        verdict, reason = "regressed", "steps are slower, outside the noise"
    elif significant and change <= -s.min_effect_pct:
        verdict, reason = "improved", "steps are faster, outside the noise"
    elif significant:
        verdict, reason = "no-change", (f"the change is outside the noise but smaller than {s.min_effect_pct:g} % "
                                        "(--min-effect)")
    else:
        verdict, reason = "no-change", "no change outside the step-to-step noise"
    return StepComparison(**base, ci_low_pct=lo, ci_high_pct=hi, p_value=rank.p_value,
                          test=f"mann-whitney-{rank.method}",
                          prob_after_faster=rank.prob_after_smaller, verdict=verdict, reason=reason)


def overall(pairs: list[StepComparison]) -> tuple[str, StepComparison | None]:
    """One verdict for the run: a regression in any process wins (a CI gate must see it),
    then an improvement, then no-change; inconclusive when no process could be judged."""
    for wanted in ("regressed", "improved", "no-change"):
        hits = [p for p in pairs if p.verdict == wanted]
        if hits:
            return wanted, max(hits, key=lambda p: abs(p.change_pct))
    return "inconclusive", (pairs[0] if pairs else None)
