"""Step detection (asv's L1 piecewise-constant fit) and the run-against-the-runs-before rule."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as hs

from perfledger.calc.changepoints import (
    change_points,
    l1_cost,
    potts_fit,
    step_fit,
    worse_by,
    worse_than_before,
)
from tests.history.series import NOISE

NIGHT = 30_298.7  # tokens/s/device of the real NeMo Llama 3 8B FP8 log on 8 B200 (tests/history/series.py)


def test_a_lasting_four_percent_slowdown_starts_a_new_level_at_its_first_run() -> None:
    series = [NIGHT / f for f in NOISE] + [NIGHT / (f * 1.04) for f in NOISE]
    assert change_points(series) == [len(NOISE)]


def test_a_steady_series_with_run_to_run_noise_has_no_change_point() -> None:
    assert change_points([NIGHT / f for f in NOISE * 3]) == []


def test_one_slow_run_is_no_new_level_but_is_flagged_against_the_runs_before_it() -> None:
    series = [NIGHT / f for f in NOISE]
    series[5] = NIGHT / (NOISE[5] * 1.04)
    judged = worse_than_before(series, window=5, threshold=0.02, higher_is_better=True)
    assert change_points(series) == []
    assert [i for i, j in enumerate(judged) if j.regressed] == [5]
    assert 0.035 < (judged[5].worse or 0) < 0.045


def test_a_longer_step_time_is_worse_and_a_higher_throughput_is_better() -> None:
    assert worse_by(4.5, 4.3, higher_is_better=False) > 0
    assert worse_by(31_000, 30_000, higher_is_better=True) < 0


def _best_partition_cost(y: list[float], gamma: float) -> float:
    """The L1 Potts objective's minimum by trying every partition (small series only)."""
    best = float("inf")
    for cuts in itertools.product((False, True), repeat=len(y) - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], len(y)]
        cost = sum(gamma + l1_cost(y[a:b]) for a, b in itertools.pairwise(bounds))
        best = min(best, cost)
    return best


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.integers(90, 110).map(float), min_size=1, max_size=8), hs.floats(0.1, 20.0))
def test_the_dynamic_programme_finds_the_cheapest_partition(y: list[float], gamma: float) -> None:
    fit = potts_fit(y, gamma)
    cost = sum(gamma + l1_cost(y[s.start:s.stop]) for s in fit)
    assert abs(cost - _best_partition_cost(y, gamma)) < 1e-9
    assert fit[0].start == 0 and fit[-1].stop == len(y)


def test_the_fit_levels_are_the_segment_medians() -> None:
    fit = step_fit([100.0, 100.4, 99.8, 100.1, 96.2, 95.9, 96.0, 96.1])
    assert [(s.start, s.stop) for s in fit] == [(0, 4), (4, 8)]
    assert [s.level for s in fit] == [100.05, 96.05]
