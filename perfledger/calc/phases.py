"""An RLHF step's parts over the steady window: generation time, training time, generation's share, samples/s.

DeepSpeed-Chat's step 3 prints for every PPO step its end-to-end latency and, within it, the time spent
generating answers (the rollout) and the time spent training actor and critic; the rest is scoring with the
reward and reference models and gathering. The rollout is what RLHF speed-ups (a hybrid engine, a faster
generator) shorten, so its share of the step is the figure to compare.

Over the steady window (the steps the step time is summarised over):
    generation_s_median, training_s_median = median of each part
    generation_share = sum(generation_s) / sum(step_time_s)      (a share of the time spent: long steps weigh more)
    training_share   = sum(training_s) / sum(step_time_s)
    samples_per_s    = sum(samples) / sum(step_time_s)
each over the steps that print the figure and a step time.
"""

from __future__ import annotations

import math

import polars as pl

from perfledger.calc import orderstats

PHASE_COLUMNS = ("generation_s", "training_s")


def _finite(column: str) -> pl.Expr:
    return pl.col(column).is_not_null() & pl.col(column).is_finite()


def phase_figures(steps: pl.LazyFrame, first_step: int | None, last_step: int | None) -> dict[str, float]:
    """The figures above over steps first_step..last_step; empty when the steps hold no phase (or no window)."""
    names = steps.collect_schema().names()
    if first_step is None or last_step is None or not all(c in names for c in (*PHASE_COLUMNS, "samples")):
        return {}
    window = pl.col("step").is_between(first_step, last_step) & _finite("step_time_s") & (pl.col("step_time_s") > 0)
    timed = steps.filter(window)
    sums = timed.select(
        pl.col("step_time_s").filter(_finite("generation_s")).sum().alias("gen_time"),
        pl.col("generation_s").filter(_finite("generation_s")).sum().alias("gen"),
        pl.col("step_time_s").filter(_finite("training_s")).sum().alias("train_time"),
        pl.col("training_s").filter(_finite("training_s")).sum().alias("train"),
        pl.col("step_time_s").filter(_finite("samples")).sum().alias("samples_time"),
        pl.col("samples").filter(_finite("samples")).sum().alias("samples"),
    ).collect(engine="streaming").row(0, named=True)
    out: dict[str, float | None] = {
        "generation_s_median": orderstats.quantile(steps, pl.col("generation_s"), 0.5, window),
        "training_s_median": orderstats.quantile(steps, pl.col("training_s"), 0.5, window),
        "generation_share": _ratio(sums["gen"], sums["gen_time"]),
        "training_share": _ratio(sums["train"], sums["train_time"]),
        "samples_per_s": _ratio(sums["samples"], sums["samples_time"]),
    }
    if out["generation_s_median"] is None and out["training_s_median"] is None:
        return {}
    return {k: v for k, v in out.items() if v is not None and math.isfinite(v)}


def _ratio(part: float | None, whole: float | None) -> float | None:
    return part / whole if part is not None and whole else None
