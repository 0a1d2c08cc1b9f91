"""The shape of one run's step periods: quantiles, the mean, and a note when a few long steps
take much of the time (a bursty input pipeline, a checkpoint every N steps), which is when
the median says nothing about how long the run takes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean

from nsys_diagnose.compare.stats import LONG_STEP_FACTOR as TAIL_FACTOR
from nsys_diagnose.units import duration

TAIL_MIN_SHARE = 0.25    # the long steps must take at least this share of the time for a note


@dataclass(frozen=True)
class Distribution:
    steps: int
    mean_ns: float
    p10_ns: float
    p50_ns: float
    p90_ns: float
    max_ns: float
    long_steps: int          # steps longer than TAIL_FACTOR x the median
    long_share_pct: float    # their share of the total time, in %
    note: str | None         # "3 of 18 steps take 70 % of the time", when the tail matters


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, 'type 7')."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def describe(periods: Sequence[float]) -> Distribution:
    if not periods:
        raise ValueError("no step periods to describe")
    mid = quantile(periods, 0.5)
    long = [p for p in periods if p > TAIL_FACTOR * mid]
    total = sum(periods)
    share = 100.0 * sum(long) / total if total else 0.0
    note = None
    if long and share >= 100 * TAIL_MIN_SHARE:
        note = (f"{len(long)} of {len(periods)} steps take {share:.0f} % of the time (each over "
                f"{TAIL_FACTOR:g}x the median {duration(mid)}): the mean, {duration(mean(periods))}, is the pace")
    return Distribution(steps=len(periods), mean_ns=mean(periods), p10_ns=quantile(periods, 0.1), p50_ns=mid,
                        p90_ns=quantile(periods, 0.9), max_ns=max(periods), long_steps=len(long),
                        long_share_pct=share, note=note)
