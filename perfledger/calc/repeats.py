"""Repeats of one configuration: how noisy a figure is (median and spread), and MLPerf's score of a set of runs.

The spread is the median, the interquartile range and the extremes of the runs, with their count; quantiles are
interpolated linearly between order statistics (numpy's and Polars' default). Two configurations whose IQRs
overlap are not told apart by their medians alone, and a comparison says so.

MLPerf Training scores a benchmark result as an "olympic" mean of the runs' times to train: drop the fastest and
the slowest runs and average the rest; a run that did not converge counts as the slowest and is dropped first,
and more non-converging runs than the rule allows make the result invalid (MLCommons, "MLPerf Training Rules",
section "Benchmark Results", github.com/mlcommons/training_policies/blob/master/training_rules.adoc). How many
runs each benchmark needs, and how many are dropped at each end, is data (data/mlperf_scoring.csv).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from perfledger.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Spread:
    """Median and spread of one configuration's repeats."""

    n: int
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def range(self) -> float:
        return self.maximum - self.minimum

    def describe(self, fmt: str = ",.4g") -> str:
        """"median 1,765 (IQR 1,764-1,768, min-max 1,756-1,996, n=10)"."""
        return (f"median {self.median:{fmt}} (IQR {self.q1:{fmt}}-{self.q3:{fmt}}, "
                f"min-max {self.minimum:{fmt}}-{self.maximum:{fmt}}, n={self.n})")


@dataclass(frozen=True, slots=True)
class ScoringRule:
    """One benchmark's row of MLCommons' table: runs needed, runs dropped at each end, non-converging runs allowed."""

    benchmark: str
    runs: int
    dropped_each_end: int = 1
    max_non_converged: int = 1
    source: str = ""

    def describe(self) -> str:
        kept = self.runs - 2 * self.dropped_each_end
        return (f"MLPerf olympic mean: {self.runs} runs, the {self.dropped_each_end} fastest and "
                f"{self.dropped_each_end} slowest dropped, the mean of the other {kept}; at most "
                f"{self.max_non_converged} non-converging")


@dataclass(frozen=True, slots=True)
class OlympicScore:
    """A set of runs scored by a ScoringRule: the score (None when the set is invalid) and why."""

    value: float | None
    used: int
    converged: int
    non_converged: int
    rule: ScoringRule
    problem: str | None = None

    @property
    def valid(self) -> bool:
        return self.problem is None


def quantile_linear(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of values sorted ascending, interpolated linearly.

    index = q * (n - 1); quantile = v[floor] + (index - floor) * (v[ceil] - v[floor])

    >>> quantile_linear([1.0, 2.0, 3.0, 4.0], 0.25)
    1.75
    """
    if not ordered:
        raise InvalidInput("a quantile needs at least one value")
    index = q * (len(ordered) - 1)
    low = math.floor(index)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (index - low) * (ordered[high] - ordered[low])


def finite_values(values: Sequence[float | None]) -> list[float]:
    """The values that are numbers (None, NaN and infinities left out), sorted ascending."""
    return sorted(v for v in values if v is not None and math.isfinite(v))


def spread(values: Sequence[float | None]) -> Spread | None:
    """Median, quartiles and extremes of the finite values; None when there is none.

    median = q(0.5), IQR = q(0.75) - q(0.25), range = max - min   (q: quantile_linear)

    >>> spread([3.0, 1.0, 2.0, 4.0]).describe(".2f")
    'median 2.50 (IQR 1.75-3.25, min-max 1.00-4.00, n=4)'
    """
    ordered = finite_values(values)
    if not ordered:
        return None
    return Spread(n=len(ordered), median=quantile_linear(ordered, 0.5), q1=quantile_linear(ordered, 0.25),
                  q3=quantile_linear(ordered, 0.75), minimum=ordered[0], maximum=ordered[-1])


def spreads_overlap(a: Spread, b: Spread) -> bool:
    """Whether two configurations' interquartile ranges overlap: their medians alone do not tell them apart.

    overlap = a.q1 <= b.q3 and b.q1 <= a.q3

    >>> spreads_overlap(spread([1.0, 2.0, 3.0]), spread([2.0, 3.0, 4.0]))
    True
    """
    return a.q1 <= b.q3 and b.q1 <= a.q3


def olympic_score(times: Sequence[float | None], rule: ScoringRule) -> OlympicScore:
    """MLPerf's score of a set of runs: None for a run that did not converge (it counts as the slowest).

    score = mean(sorted(times)[k : n - k])   (k = rule.dropped_each_end; non-converged runs sort last)

    >>> olympic_score([5.0, 1.0, 3.0, 4.0, 2.0], ScoringRule("resnet", runs=5)).value
    3.0
    """
    converged = finite_values(times)
    failed = len(times) - len(converged)
    k = rule.dropped_each_end
    problem = _olympic_problem(len(times), failed, rule)
    ordered = converged + [math.inf] * failed
    kept = ordered[k:len(ordered) - k]
    if problem is None and (not kept or any(math.isinf(t) for t in kept)):
        problem = f"{failed} non-converging runs leave too few converged runs to average"
    value = sum(kept) / len(kept) if problem is None else None
    return OlympicScore(value=value, used=len(kept), converged=len(converged), non_converged=failed, rule=rule,
                        problem=problem)


def _olympic_problem(n: int, failed: int, rule: ScoringRule) -> str | None:
    if n < rule.runs:
        return f"{rule.benchmark} needs {rule.runs} runs; the set has {n}"
    if failed > rule.max_non_converged:
        return f"{failed} runs did not converge; {rule.benchmark} allows {rule.max_non_converged}"
    return None


REPEATS_SCHEMA: dict[str, pl.DataType] = {
    "configuration": pl.String(), "metric": pl.String(), "unit": pl.String(), "n": pl.Int64(),
    "median": pl.Float64(), "q1": pl.Float64(), "q3": pl.Float64(), "iqr": pl.Float64(), "min": pl.Float64(),
    "max": pl.Float64(), "not_measured": pl.Int64(), "overlaps": pl.String(),
}


def summarise_repeats(attempts: pl.DataFrame, measured: Sequence[str]) -> pl.DataFrame:
    """One row per configuration and metric: the spread of the attempts whose kind is in `measured`, how many
    other attempts it had, and which configurations' IQRs (same metric) overlap its own.

    `attempts` has columns configuration (a JSON text), kind, metric, value, unit.
    """
    groups: dict[tuple[str, str], list[float | None]] = {}
    units: dict[tuple[str, str], str] = {}
    others: dict[str, int] = {}
    for row in attempts.iter_rows(named=True):
        if row["metric"] is None or row["kind"] not in measured:
            others[row["configuration"]] = others.get(row["configuration"], 0) + 1
            continue
        key = (row["configuration"], row["metric"])
        groups.setdefault(key, []).append(row["value"])
        units[key] = row["unit"]
    spreads = {key: s for key, values in groups.items() if (s := spread(values)) is not None}
    rows = [_repeat_row(key, units[key], s, others.get(key[0], 0), _overlapping(key, s, spreads))
            for key, s in spreads.items()]
    return pl.DataFrame(rows, schema=REPEATS_SCHEMA, orient="row")


def _overlapping(key: tuple[str, str], own: Spread, spreads: dict[tuple[str, str], Spread]) -> str:
    return "; ".join(other[0] for other, s in spreads.items()
                     if other != key and other[1] == key[1] and spreads_overlap(own, s))


def _repeat_row(key: tuple[str, str], unit: str, s: Spread, others: int, overlaps: str) -> tuple[object, ...]:
    return (key[0], key[1], unit, s.n, s.median, s.q1, s.q3, s.iqr, s.minimum, s.maximum, others, overlaps)


__all__ = [
    "REPEATS_SCHEMA",
    "OlympicScore",
    "ScoringRule",
    "Spread",
    "finite_values",
    "olympic_score",
    "quantile_linear",
    "spread",
    "spreads_overlap",
    "summarise_repeats",
]
