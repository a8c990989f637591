"""Change points in a configuration's series of runs, and whether a run is worse than the runs before it.

Step detection follows asv (airspeed velocity, `asv/step_detect.py`). The series y_1..y_m is fitted by a
piecewise-constant function with k segments that minimises

    gamma * k + sum_r sum_{i in segment r} |y_i - mu_r|        (mu_r: the segment's median)

the L1 Potts problem of F. Friedrich et al., "Complexity Penalized M-Estimation: Fast Computation", Journal of
Computational and Graphical Statistics 17(1), 201-224 (2008), doi:10.1198/106186008X285591. It is solved exactly
by dynamic programming over the segment ends (optimal partitioning, B. Jackson et al., IEEE Signal Processing
Letters 12(2), 105-108, 2005); the L1 cost of all O(m^2) intervals comes from running medians.
gamma is chosen as asv chooses it: among the fits for a ladder of gammas, the one that minimises a Schwarz-type
criterion (Y.-C. Yao, Statistics & Probability Letters 6, 181-189, 1988, doi:10.1016/0167-7152(88)90118-6)

    SC(k) = BETA * k * ln(m) / m + ln(sigma_0 + mean |y_i - mu_r|)

with a noise floor sigma_0 (a perfect fit would otherwise always win) of 0.1% of the series' median: asv's floor
for a fit of one segment. asv's floor for several (a tenth of the smallest step between levels) is not used: it
grows with a real step and shrinks with a spurious one, and on series of runs it preferred a spurious third
segment to the one real step. A single odd run is not a step under this rule;
`worse_than_before` judges each run against the median of the runs before it, as a CI check does.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

BETA = 4.0  # asv's weight of the segment count: 4 ln(m) / m per segment
GAMMA_LADDER = tuple(math.exp(-x / 4) for x in range(41))  # gamma_0 * e^0 .. gamma_0 * e^-10
MAX_POINTS = 400  # the most recent points fitted: O(m^2) intervals


@dataclass(frozen=True, slots=True)
class Segment:
    """Points start..stop-1 of a series, at one level (their median)."""

    start: int
    stop: int
    level: float


def l1_cost(values: Sequence[float]) -> float:
    """sum |v - median(values)|: how far the points lie from one level.

    >>> l1_cost([1.0, 2.0, 6.0])
    5.0
    """
    if not values:
        return 0.0
    mid = median(values)
    return sum(abs(v - mid) for v in values)


def interval_costs(y: Sequence[float]) -> np.ndarray:
    """cost[i, j] = l1_cost(y[i:j]) for every 0 <= i < j <= m, by running medians: for each start, the points so
    far in two heaps (the lower half, the upper half) with their sums, so that the cost about the median is
    sum(upper) - sum(lower), plus the middle point when their number is odd (O(m^2 log m), not O(m^3)).

    >>> interval_costs([1.0, 2.0, 6.0])[0].tolist()
    [0.0, 0.0, 1.0, 5.0]
    """
    m = len(y)
    cost = np.zeros((m + 1, m + 1))
    for i in range(m):
        lower: list[float] = []  # negated: a max-heap
        upper: list[float] = []
        sum_lower = sum_upper = 0.0
        for j in range(i, m):
            value = float(y[j])
            if lower and value > -lower[0]:
                heapq.heappush(upper, value)
                sum_upper += value
            else:
                heapq.heappush(lower, -value)
                sum_lower += value
            if len(lower) > len(upper) + 1:
                moved = -heapq.heappop(lower)
                heapq.heappush(upper, moved)
                sum_lower, sum_upper = sum_lower - moved, sum_upper + moved
            elif len(upper) > len(lower):
                moved = heapq.heappop(upper)
                heapq.heappush(lower, -moved)
                sum_lower, sum_upper = sum_lower + moved, sum_upper - moved
            middle = -lower[0] if len(lower) > len(upper) else 0.0
            cost[i, j + 1] = sum_upper - sum_lower + middle
    return cost


def potts_fit(y: Sequence[float], gamma: float, costs: np.ndarray | None = None) -> tuple[Segment, ...]:
    """The segments minimising gamma * k + sum of each segment's L1 cost (exact, by dynamic programming).

    >>> [(s.start, s.stop, s.level) for s in potts_fit([10, 10, 10, 12, 12, 12], gamma=1.0)]
    [(0, 3, 10), (3, 6, 12)]
    """
    m = len(y)
    if m == 0:
        return ()
    cost = costs if costs is not None else interval_costs(y)
    best = np.zeros(m + 1)
    cut = [0] * (m + 1)
    for j in range(1, m + 1):
        totals = best[:j] + gamma + cost[:j, j]
        cut[j] = int(np.argmin(totals))
        best[j] = totals[cut[j]]
    ends = []
    j = m
    while j > 0:
        ends.append((cut[j], j))
        j = cut[j]
    return tuple(Segment(i, j, median(y[i:j])) for i, j in reversed(ends))


def schwarz_criterion(y: Sequence[float], segments: Sequence[Segment]) -> float:
    """The criterion for choosing among fits: BETA k ln(m)/m + ln(sigma_0 + mean absolute deviation)."""
    m = len(y)
    deviation = sum(abs(y[i] - s.level) for s in segments for i in range(s.start, s.stop)) / m
    return BETA * len(segments) * math.log(m) / m + math.log(noise_floor(y) + deviation)


def noise_floor(y: Sequence[float]) -> float:
    """sigma_0: 0.1% of the series' median (the smallest noise the criterion believes in)."""
    return 0.001 * abs(median(y)) or 1e-12


def step_fit(y: Sequence[float]) -> tuple[Segment, ...]:
    """The piecewise-constant fit of `y` chosen by the Schwarz-type criterion over a ladder of gammas.

    >>> [(s.start, s.level) for s in step_fit([100, 100.2, 99.9, 100.1, 96, 96.1, 95.9, 96.2])]
    [(0, 100.05), (4, 96.05)]
    >>> len(step_fit([100, 100, 100, 96, 100, 100, 100]))  # one odd run is not a step
    1
    """
    values = [float(v) for v in y]
    if len(values) < 3:
        return (Segment(0, len(values), median(values)),) if values else ()
    costs = interval_costs(values)
    gamma_0 = float(costs[0, len(values)])
    if gamma_0 == 0:
        return (Segment(0, len(values), values[0]),)
    fits = {potts_fit(values, gamma_0 * g, costs) for g in GAMMA_LADDER}
    return min(fits, key=lambda fit: (schwarz_criterion(values, fit), len(fit)))


def recent_fit(y: Sequence[float]) -> tuple[Segment, ...]:
    """step_fit of the last MAX_POINTS points, their segments indexed into the whole of `y`."""
    offset = max(0, len(y) - MAX_POINTS)
    return tuple(Segment(s.start + offset, s.stop + offset, s.level) for s in step_fit(list(y)[offset:]))


def change_points(y: Sequence[float]) -> list[int]:
    """The indices where a new level starts (the first point of every segment but the first).

    >>> change_points([5.0, 5.0, 5.1, 4.9, 8.0, 8.1, 7.9, 8.0])
    [4]
    """
    return [s.start for s in recent_fit(y)[1:]]


def worse_by(value: float, baseline: float, *, higher_is_better: bool) -> float:
    """How much worse `value` is than `baseline`, as a fraction of the baseline (negative: better).

    worse = (baseline - value) / baseline when higher is better, (value - baseline) / baseline when lower is.

    >>> round(worse_by(96.0, 100.0, higher_is_better=True), 3), round(worse_by(4.16, 4.0, higher_is_better=False), 3)
    (0.04, 0.04)
    """
    if baseline == 0:
        return 0.0
    change = (value - baseline) / abs(baseline)
    return -change if higher_is_better else change


@dataclass(frozen=True, slots=True)
class Judged:
    """One point against the median of up to `window` points before it."""

    baseline: float | None  # None: no point before it
    worse: float | None  # worse_by(value, baseline); None without a baseline
    regressed: bool  # worse by more than the threshold


def worse_than_before(y: Sequence[float], *, window: int, threshold: float, higher_is_better: bool) -> list[Judged]:
    """Each point judged against the median of the `window` points before it: regressed when worse by more than
    `threshold` (a fraction).

    >>> [j.regressed for j in worse_than_before([100, 101, 99, 96, 100], window=5, threshold=0.02,
    ...                                          higher_is_better=True)]
    [False, False, False, True, False]
    """
    out = []
    for i, value in enumerate(y):
        before = list(y[max(0, i - window):i])
        if not before:
            out.append(Judged(None, None, False))
            continue
        base = median(before)
        worse = worse_by(value, base, higher_is_better=higher_is_better)
        out.append(Judged(base, worse, worse > threshold))
    return out
