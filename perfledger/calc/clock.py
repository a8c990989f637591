"""A progress bar's clock over the steady window, where the step time is the bar's printed rate.

tqdm prints its rate (`1.46it/s`, `3.77s/it`) as an exponential moving average of the rate of recent updates: for
sub-second or uneven steps it is off from the wall clock by more than 10% (it averages rates, not times). Where the
bar also prints its elapsed time (`[01:02<05:16, ...]`), the window's step time is the clock's:

    step time = (elapsed at the window's last bar - elapsed at its first) / (last step - first step)

and the printed rate stays beside it as the log's own figure (its median over the window). Evaluation or a pause
inside the window counts, as on any wall clock. tqdm prints elapsed in whole seconds, so each end is off by up to
a second and their difference by less than one: only a window spanning MIN_CLOCK_SPAN_S seconds or more is timed
by the clock (within 1%); a shorter one keeps the printed rate. Smoothing moves the printed rate by tens of
percent at most: a clock more than MAX_CLOCK_RATIO times the printed rate (or less than its inverse) holds time the
bar did not advance in (an evaluation between epochs, records logged once an epoch), and the printed rate is kept.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import polars as pl

from perfledger.calc.steady import SteadyState

MIN_CLOCK_SPAN_S = 100.0  # a whole-second clock is within 1% over 100 s or more
MAX_CLOCK_RATIO = 1.5  # beyond it the clock holds pauses, not smoothing (a real log: 25x, evaluation per epoch)


def timed_by_clock(steps: pl.LazyFrame, steady: SteadyState | None) -> tuple[SteadyState | None, dict[str, Any]]:
    """`steady` with its step time (and tokens/s) from the bar's clock over its window, and what to report beside
    it (the printed rate's median, the difference, how the clock was read); unchanged and {} where the steps carry
    no clock (`clock_s`), or the window spans less than MIN_CLOCK_SPAN_S.

    >>> from perfledger.calc.steady import SteadyRule
    >>> s = SteadyState(2, 201, 200, 1, 0, 0.45, 0.5, 0.1, 1.1, 2000.0, SteadyRule())
    >>> f = pl.LazyFrame({"step": [2, 100, 201], "step_time_s": [0.45, 0.45, 0.45], "clock_s": [1.0, 60.0, 101.0]})
    >>> new, said = timed_by_clock(f, s)
    >>> (round(new.step_time_s_median, 4), round(new.tokens_per_s, 1), said["reported_step_time_s"])
    (0.5025, 1791.0, 0.45)
    """
    names = steps.collect_schema().names()
    if steady is None or steady.first_step is None or steady.last_step is None or "clock_s" not in names:
        return steady, {}
    by_step = pl.col("clock_s").sort_by("step")
    row = (steps.filter(pl.col("step").is_between(steady.first_step, steady.last_step)
                        & pl.col("clock_s").is_not_null())
           .select(pl.col("step").min().alias("s0"), pl.col("step").max().alias("s1"), by_step.first().alias("c0"),
                   by_step.last().alias("c1"), pl.col("step_time_s").median().alias("printed"),
                   pl.col("step_time_s").mean().alias("mean"))
           .collect().row(0, named=True))
    if row["s0"] is None or row["s1"] <= row["s0"] or not row["c1"] - row["c0"] >= MIN_CLOCK_SPAN_S:
        return steady, {}
    clock = (row["c1"] - row["c0"]) / (row["s1"] - row["s0"])
    tokens = steady.tokens_per_s * row["mean"] / clock if steady.tokens_per_s and row["mean"] else None
    printed = row["printed"]
    if printed and not 1 / MAX_CLOCK_RATIO <= clock / printed <= MAX_CLOCK_RATIO:
        return steady, {}
    said: dict[str, Any] = {
        "step_time_clock": f"the progress bar's clock: elapsed {row['c1'] - row['c0']:,.0f} s over steps "
                           f"{row['s0']:,}-{row['s1']:,} of the steady window (tqdm's printed rate, a moving "
                           "average, is the log's own figure beside it: its median over the window)"}
    if printed is not None and math.isfinite(printed) and printed > 0:
        said |= {"reported_step_time_s": printed, "diff_step_time_s": (clock - printed) / printed}
    return replace(steady, step_time_s_median=clock, tokens_per_s=tokens), said
