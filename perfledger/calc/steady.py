"""Steady state of a training run: which steps count, and the throughput and jitter over them.

The rule is explicit and stored with every derived figure:
- warm-up: the first max(warmup_min_steps, ceil(warmup_fraction * n)) logged steps, capped at half of them
  (n // 2), so that a short run keeps its later half: 1000 steps drop 100, 20 drop 3, 4 drop 2, 1 drops none;
- stall: after warm-up, a step slower than max(median * (1 + stall_min_excess),
  median + stall_mads * 1.4826 * MAD) (eval, checkpoint, a straggler); counted, then excluded; fewer than three
  timed steps after warm-up are never called stalls;
- steady window: the remaining steps. Throughput = tokens in the window / time in the window.
- not a steady state (not_steady() says why, and the summary and the Runs page show it): fewer than
  min_steady_steps (5) timed steps in the window, a window of one step, or no timed step left once warm-up and
  stalls are dropped. The figures are still computed, over what there is, and flagged.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from perfledger.calc import orderstats
from perfledger.errors import InvalidInput

MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True, slots=True)
class SteadyRule:
    warmup_min_steps: int = 3
    warmup_fraction: float = 0.1
    stall_mads: float = 5.0
    stall_min_excess: float = 0.25
    min_steady_steps: int = 5  # fewer timed steps in the window: the figures are flagged as not a steady state
    first_step: int | None = None  # a window chosen by hand overrides the warm-up rule
    last_step: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if self.first_step is not None or self.last_step is not None:
            window = f"steps {self.first_step or 'first'}..{self.last_step or 'last'} chosen by hand"
        else:
            window = (f"warm-up = first max({self.warmup_min_steps}, {self.warmup_fraction:.0%} of steps), "
                      "at most half of them")
        return (
            f"{window}; stall = step time > max(median x {1 + self.stall_min_excess:g}, "
            f"median + {self.stall_mads:g} x 1.4826 x MAD)"
        )


@dataclass(frozen=True, slots=True)
class SteadyState:
    first_step: int | None
    last_step: int | None
    steps_in_window: int
    warmup_steps: int
    stalls: int
    step_time_s_median: float | None
    step_time_s_p99: float | None
    jitter_cv: float | None
    jitter_p99_p50: float | None
    tokens_per_s: float | None  # aggregate over all devices
    rule: SteadyRule
    timed_steps: int | None = None  # steps in the window with a step time (None: not counted)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["rule"] = self.rule.as_dict()
        return out


def warmup_count(n_steps: int, rule: SteadyRule) -> int:
    """How many leading logged steps the warm-up rule drops.

    >>> warmup_count(1000, SteadyRule())
    100
    >>> warmup_count(4, SteadyRule())
    2
    """
    return min(max(rule.warmup_min_steps, math.ceil(rule.warmup_fraction * n_steps)), n_steps // 2)


def label_steps(steps: pl.DataFrame, rule: SteadyRule = SteadyRule()) -> pl.Series:
    """One label per row of `steps` (ordered by step): "warmup", "stall", "steady" or "untimed"."""
    if steps.height == 0:
        return pl.Series("phase", [], dtype=pl.String)
    p = _phases(steps, rule)
    return pl.select(
        pl.when(~p.inside).then(pl.lit("warmup"))
        .when(~p.timed).then(pl.lit("untimed"))
        .when(p.stalled).then(pl.lit("stall"))
        .otherwise(pl.lit("steady"))
        .alias("phase")
    )["phase"]


@dataclass(frozen=True, slots=True)
class _Phases:
    """Boolean masks over steps ordered by step (a bit per row: a run of millions of steps stays small)."""

    inside: pl.Series  # past the warm-up (or inside the window chosen by hand)
    timed: pl.Series  # has a finite, positive step time
    stalled: pl.Series  # inside, timed and slower than the stall threshold
    time_s: pl.Series

    @property
    def steady(self) -> pl.Series:
        return self.inside & self.timed & ~self.stalled

    @property
    def window(self) -> pl.Series:  # steady or untimed
        return self.inside & ~self.stalled


def _phases(steps: pl.DataFrame, rule: SteadyRule) -> _Phases:
    t = steps["step_time_s"].cast(pl.Float64)
    inside = _inside(steps, rule)
    timed = (t.is_not_null() & t.is_finite() & (t > 0)).fill_null(False)
    threshold = _stall_threshold(t.filter(inside & timed), rule)
    if threshold is None:  # too few timed steps to call any of them a stall
        stalled = pl.repeat(False, steps.height, eager=True)
    else:
        stalled = (inside & timed & (t > threshold)).fill_null(False)
    return _Phases(inside=inside, timed=timed, stalled=stalled, time_s=t)


def _inside(steps: pl.DataFrame, rule: SteadyRule) -> pl.Series:
    """True past the warm-up, or inside the window chosen by hand (a bit per row, no row index built)."""
    if (by_hand := _window_by_hand(rule)) is not None:
        return steps.select(by_hand)[:, 0]
    warmup = warmup_count(steps.height, rule)
    return pl.concat([pl.repeat(False, warmup, eager=True), pl.repeat(True, steps.height - warmup, eager=True)])


def _stall_threshold(times: pl.Series, rule: SteadyRule) -> float | None:
    if times.len() < 3:
        return None
    median = float(times.median())  # type: ignore[arg-type]
    mad = float((times - median).abs().median())  # type: ignore[arg-type]
    return max(median * (1 + rule.stall_min_excess), median + rule.stall_mads * MAD_TO_SIGMA * mad)


def steady_state(steps: pl.DataFrame, rule: SteadyRule = SteadyRule()) -> SteadyState:
    """Steady-state step time, jitter and aggregate tokens/s over the window the rule keeps.

    steps needs columns step, step_time_s (s), tokens (per step, all devices; may be null).
    tokens_per_s = sum(tokens) / sum(step_time_s) over steady steps        (tokens/s, all devices)
    jitter_cv = std(step_time_s) / mean(step_time_s); jitter_p99_p50 = p99 / p50   (dimensionless)

    >>> import polars as pl
    >>> f = pl.DataFrame({"step": range(1, 21), "step_time_s": [9.0] + [1.0] * 18 + [5.0], "tokens": [1000.0] * 20})
    >>> s = steady_state(f)
    >>> (s.warmup_steps, s.stalls, s.step_time_s_median, s.tokens_per_s)
    (3, 1, 1.0, 1000.0)
    """
    if steps.height == 0:
        raise InvalidInput("the run has no steps, so it has no steady state")
    ordered = steps.select("step", "step_time_s", "tokens")
    if not ordered["step"].is_sorted():
        ordered = ordered.sort("step", maintain_order=True)  # repeated steps keep their order in the log
    p = _phases(ordered, rule)
    steady = p.steady
    window_steps = ordered["step"].filter(p.window)
    times = p.time_s.filter(steady)
    median = _q(times, 0.5)
    p99 = _q(times, 0.99)
    return SteadyState(
        first_step=_int_or_none(window_steps.min()),
        last_step=_int_or_none(window_steps.max()),
        steps_in_window=window_steps.len(),
        warmup_steps=int((~p.inside).sum()),
        stalls=int(p.stalled.sum()),
        step_time_s_median=median,
        step_time_s_p99=p99,
        jitter_cv=_cv(times),
        jitter_p99_p50=(p99 / median) if median and p99 is not None else None,
        tokens_per_s=_tokens_per_s(times, ordered["tokens"].filter(steady)),
        rule=rule,
        timed_steps=times.len(),
    )


def steady_state_of_ordered(steps: pl.LazyFrame, rule: SteadyRule = SteadyRule()) -> SteadyState:
    """steady_state() of steps already in step order, read in streaming passes instead of held in memory
    (medians and p99 by perfledger.calc.orderstats), so a run of millions of steps costs no more memory than a
    short one. Same rule, same formulas: order statistics equal steady_state()'s to the last bit; mean, std
    and sums to rounding (their summation order differs, as it already does between two chunkings of a frame).
    """
    rows = steps.select("step", "step_time_s", "tokens").with_row_index("_row")
    n = orderstats.count(steps)
    if n == 0:
        raise InvalidInput("the run has no steps, so it has no steady state")
    t = pl.col("step_time_s").cast(pl.Float64)
    tokens = pl.col("tokens").cast(pl.Float64)
    inside = _inside_expr(n, rule)
    timed = (t.is_not_null() & t.is_finite() & (t > 0)).fill_null(False)
    threshold = _stall_threshold_of(rows, t, inside & timed, rule)
    stalled = pl.lit(False) if threshold is None else (inside & timed & (t > threshold)).fill_null(False)
    steady, window = inside & timed & ~stalled, inside & ~stalled
    counted = steady & tokens.is_not_null() & tokens.is_finite()
    totals = rows.select(
        (~inside).sum().alias("warmup"), stalled.sum().alias("stalls"), window.sum().alias("in_window"),
        pl.col("step").filter(window).min().alias("first"), pl.col("step").filter(window).max().alias("last"),
        steady.sum().alias("n_steady"), t.filter(steady).mean().alias("mean"),
        t.filter(counted).sum().alias("time"), tokens.filter(counted).sum().alias("tokens"),
        counted.any().alias("any_counted"),
    ).collect(engine="streaming").row(0, named=True)
    median, p99 = orderstats.quantiles(rows, t, [0.5, 0.99], steady)
    cv = _cv_of(rows, t.filter(steady), totals["n_steady"], totals["mean"])
    time = totals["time"] if totals["any_counted"] else 0.0
    return SteadyState(
        first_step=_int_or_none(totals["first"]),
        last_step=_int_or_none(totals["last"]),
        steps_in_window=int(totals["in_window"]),
        warmup_steps=int(totals["warmup"]),
        stalls=int(totals["stalls"]),
        step_time_s_median=median,
        step_time_s_p99=p99,
        jitter_cv=cv,
        jitter_p99_p50=(p99 / median) if median and p99 is not None else None,
        tokens_per_s=totals["tokens"] / time if time > 0 else None,
        rule=rule,
        timed_steps=int(totals["n_steady"]),
    )


def label_steps_of_ordered(steps: pl.LazyFrame, rule: SteadyRule = SteadyRule()) -> pl.Expr:
    """label_steps() of steps already in step order, its threshold found in streaming passes: an expression over
    rows that carry their row number in step order as "_row" (a chunk of the run at a time, say)."""
    rows = steps.with_row_index("_row")
    n = orderstats.count(steps)
    t = pl.col("step_time_s").cast(pl.Float64)
    inside = _inside_expr(n, rule)
    timed = (t.is_not_null() & t.is_finite() & (t > 0)).fill_null(False)
    threshold = _stall_threshold_of(rows, t, inside & timed, rule)
    stalled = pl.lit(False) if threshold is None else (inside & timed & (t > threshold)).fill_null(False)
    return (pl.when(~inside).then(pl.lit("warmup")).when(~timed).then(pl.lit("untimed"))
            .when(stalled).then(pl.lit("stall")).otherwise(pl.lit("steady")).alias("phase"))


def not_steady(s: SteadyState) -> list[str]:
    """Why the window is not a steady state (empty when it is): too few timed steps, one step, nothing left.

    >>> import polars as pl
    >>> not_steady(steady_state(pl.DataFrame({"step": [1, 2], "step_time_s": [3.0, 1.0], "tokens": [8.0, 8.0]})))
    ['only 1 timed step after warm-up and stalls (fewer than 5)', 'the window is a single step']
    """
    timed = s.timed_steps if s.timed_steps is not None else s.steps_in_window
    out = []
    if timed == 0:
        out.append(f"every timed step after warm-up is a stall ({s.stalls})" if s.stalls
                   else "no step after warm-up has a step time")
    elif timed < s.rule.min_steady_steps:
        out.append(f"only {timed} timed step{'s' if timed != 1 else ''} after warm-up and stalls "
                   f"(fewer than {s.rule.min_steady_steps})")
    if s.steps_in_window == 1:
        out.append("the window is a single step")
    return out


def _cv_of(rows: pl.LazyFrame, times: pl.Expr, n: int, mean: float | None) -> float | None:
    """_cv() in a second pass: the sum of squares about the mean, not the one-pass formula, whose cancellation
    gave a CV of 2e-16 for six equal step times."""
    if n < 2 or mean is None or mean <= 0:
        return None
    squares = rows.select(((times - mean) ** 2).sum()).collect(engine="streaming").item()
    return _twelve_digits(math.sqrt(squares / (n - 1)) / mean)


def _twelve_digits(cv: float) -> float:
    """The streaming engine sums in chunks whose bounds depend on what else the frame holds, so the same steps
    gave CVs 4e-17 apart in one log and in the same log behind a smoke test; 12 digits is past any reading."""
    return float(f"{cv:.12g}")


def _inside_expr(n_steps: int, rule: SteadyRule) -> pl.Expr:
    """_inside() as an expression over rows numbered "_row" in step order."""
    by_hand = _window_by_hand(rule)
    return by_hand if by_hand is not None else pl.col("_row") >= warmup_count(n_steps, rule)


def _window_by_hand(rule: SteadyRule) -> pl.Expr | None:
    if rule.first_step is None and rule.last_step is None:
        return None
    lo = rule.first_step if rule.first_step is not None else -(2**62)
    hi = rule.last_step if rule.last_step is not None else 2**62
    return (pl.col("step") >= lo) & (pl.col("step") <= hi)


def _stall_threshold_of(rows: pl.LazyFrame, t: pl.Expr, candidates: pl.Expr, rule: SteadyRule) -> float | None:
    """_stall_threshold() of the step times where `candidates` holds, read in passes."""
    n, (median,) = orderstats.counted_quantiles(rows, t, [0.5], candidates)
    if n < 3:
        return None
    assert median is not None
    mad = orderstats.quantile(rows, (t - median).abs(), 0.5, candidates)
    assert mad is not None
    return max(median * (1 + rule.stall_min_excess), median + rule.stall_mads * MAD_TO_SIGMA * mad)


def _q(values: pl.Series, q: float) -> float | None:
    if values.len() == 0:
        return None
    return float(values.quantile(q, interpolation="linear"))  # type: ignore[arg-type]


def _cv(values: pl.Series) -> float | None:
    """Summed by math.fsum, which rounds once whatever the order, then cut as _cv_of() is, so both paths agree."""
    n = values.len()
    if n < 2:
        return None
    x = values.to_numpy()
    mean = math.fsum(x) / n
    if mean <= 0:
        return None
    return _twelve_digits(math.sqrt(math.fsum((x - mean) ** 2) / (n - 1)) / mean)


def _tokens_per_s(times: pl.Series, tokens: pl.Series) -> float | None:
    counted = tokens.is_not_null() & tokens.is_finite()
    total_time = float(times.filter(counted).sum()) if counted.any() else 0.0
    if total_time <= 0:
        return None
    return float(tokens.filter(counted).sum()) / total_time


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
