"""Small, dependency-free statistics for comparing two samples of step periods.

- A bootstrap confidence interval of the relative change of the mean period, the effect size
  a user reads ("-26 %, 95 % CI -40 % to -12 %"): the mean period is the inverse of the
  throughput, so it is what "training got 20 % faster" means. The same interval is available
  for the median, a secondary figure.
- The Mann-Whitney U rank test: whether a random step got shorter, whatever the shape of the
  distributions. It is reported, not decisive: with bursty steps (most short, a few very long)
  it answers a question about the typical step, not about the run's pace.

Steps form a time series (warm-up drift, bursts of ready batches, work every N steps), not
independent draws, so the bootstrap resamples blocks of consecutive steps (a moving-block
bootstrap) rather than single steps: an i.i.d. bootstrap would understate the noise of a
drifting run and break up a burst.
Everything is deterministic: the resampling uses a fixed seed, so a CI job gets the same
verdict for the same inputs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from statistics import median


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


LONG_STEP_FACTOR = 2.0  # a step longer than this many medians is a long step (a burst's wait)


def block_length(values: list[float]) -> int:
    """n^(1/3), the usual order for a block bootstrap, and at least one burst cycle: with k
    long steps in n, a block of n/k steps holds one wait and the ready steps that follow it,
    so a resample keeps the run's rhythm instead of drawing waits at random (at most n/2, so
    that a resample still mixes blocks)."""
    n = len(values)
    size = max(1, round(n ** (1 / 3)))
    mid = median(values)
    long = sum(v > LONG_STEP_FACTOR * mid for v in values)
    if long:
        size = max(size, min(n // 2, math.ceil(n / long)))
    return size


def block_resample(values: list[float], rng: random.Random) -> list[float]:
    """One circular block bootstrap resample of `values` (same length): blocks of consecutive
    steps, wrapping at the end, so every step is drawn equally often (moving blocks would
    under-draw the first and last steps, and with them a burst that sits at an end)."""
    n = len(values)
    size = block_length(values)
    ring = values + values[:size - 1]
    out: list[float] = []
    while len(out) < n:
        s = rng.randrange(n)
        out.extend(ring[s:s + size])
    return out[:n]


def change_ci(before: Sequence[float], after: Sequence[float], statistic: Callable[[list[float]], float], *,
              level: float = 0.95, resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of statistic(after) / statistic(before) - 1, as a fraction."""
    if not before or not after:
        raise ValueError("both samples need at least one value")
    before, after = list(before), list(after)  # (the resampler concatenates)
    rng = random.Random(seed)
    stats = []
    for _ in range(resamples):
        s_before = statistic(block_resample(before, rng))
        s_after = statistic(block_resample(after, rng))
        stats.append(s_after / s_before - 1 if s_before else 0.0)
    stats.sort()
    tail = (1 - level) / 2
    lo = stats[min(len(stats) - 1, max(0, math.floor(tail * len(stats))))]
    hi = stats[min(len(stats) - 1, max(0, math.ceil((1 - tail) * len(stats)) - 1))]
    return Interval(lo, hi)


def fmean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)  # statistics.mean is exact, and 20x slower in the bootstrap


def mean_change_ci(before: Sequence[float], after: Sequence[float], **kw) -> Interval:
    """Interval of mean(after) / mean(before) - 1: the change of the mean step period."""
    return change_ci(before, after, fmean, **kw)


def median_change_ci(before: list[float], after: list[float], **kw) -> Interval:
    """Interval of median(after) / median(before) - 1."""
    return change_ci(before, after, median, **kw)


def _midranks(values: list[float]) -> tuple[list[float], list[int]]:
    """Ranks (1-based, ties get the mean rank) and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _exact_u_cdf(n: int, m: int) -> list[float]:
    """P(U <= u) for u = 0..n*m under H0 with no ties (counts of rank arrangements)."""
    # ways[k][u]: arrangements of k values of the first sample among the ranks seen so far
    # giving statistic u; built rank by rank (a standard O(n*m*(n+m)) recursion).
    ways = [[0] * (n * m + 1) for _ in range(n + 1)]
    ways[0][0] = 1
    for placed in range(1, n + m + 1):
        for k in range(min(n, placed), 0, -1):
            before_k = placed - k  # values of the second sample ranked below this one
            if before_k > m:
                continue
            row, prev = ways[k], ways[k - 1]
            for u in range(n * m, before_k - 1, -1):
                row[u] += prev[u - before_k]
    total = math.comb(n + m, n)
    return [c / total for c in accumulate(ways[n])]


@dataclass(frozen=True)
class RankTest:
    u: float                 # Mann-Whitney U of `after` (count of pairs where after > before)
    p_value: float           # two-sided
    prob_after_smaller: float  # P(a random AFTER step is shorter than a random BEFORE one)
    method: str              # "exact" or "normal"


def mann_whitney(before: Sequence[float], after: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test. Exact distribution for small samples without ties,
    else the normal approximation with tie and continuity corrections."""
    n, m = len(after), len(before)
    if n == 0 or m == 0:
        raise ValueError("both samples need at least one value")
    ranks, ties = _midranks([*after, *before])
    u = sum(ranks[:n]) - n * (n + 1) / 2  # pairs (after, before) with after > before (+ half ties)
    prob_smaller = 1 - u / (n * m)
    if max(ties) == len(ranks):  # every value equal: no evidence of any difference
        return RankTest(u, 1.0, 0.5, "exact")
    if min(n, m) <= 10 and max(ties) == 1:
        cdf = _exact_u_cdf(n, m)
        k = int(round(u))
        lower = cdf[k]
        upper = 1 - (cdf[k - 1] if k > 0 else 0.0)
        return RankTest(u, min(1.0, 2 * min(lower, upper)), prob_smaller, "exact")
    mean = n * m / 2
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1))
    sd = math.sqrt(n * m / 12 * ((total + 1) - tie_term))
    z = (abs(u - mean) - 0.5) / sd if sd > 0 else 0.0
    p = math.erfc(max(z, 0.0) / math.sqrt(2))
    return RankTest(u, min(1.0, p), prob_smaller, "normal")


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation: a spread that a few outlier steps do not inflate."""
    mid = median(values)
    return median(abs(v - mid) for v in values)
