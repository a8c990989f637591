"""What a run's steps imply about its configuration, derived and labelled so, and the checks between what the log
states twice (a per-device figure and a total).

- Samples and tokens per step, both logged (a cumulative counter's growth, a batch column): the global batch is the
  samples per step and the sequence length the tokens per sample, when the log states neither.
- A per-device throughput the log prints beside a total it implies (tokens per step / step time): their ratio is
  the device count when the log states none; when it states one, a ratio that is not that count is said, naming
  the keys each was read from (a key read with the wrong meaning shows here first).
- A figure the printed ones imply: samples/s = the samples each step counts / its step time (median over the steady
  window), else global batch / step time (derived).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl

from perfledger.calc import orderstats
from perfledger.calc.steady import SteadyState
from perfledger.records import ResultRecord, RunConfig
from perfledger.vocabulary import Metric

INTEGER_TOLERANCE = 0.02  # a ratio this close to a whole number is that number
MISMATCH = 0.05  # per device x devices further than this from the total: said


def batch_from_steps(steps: pl.DataFrame | pl.LazyFrame, config: RunConfig,
                     provenance: dict[str, Any]) -> RunConfig:
    """`config` with the global batch and sequence length the steps' samples and tokens imply, where unstated."""
    if config.global_batch and config.seq_len:
        return config
    names = steps.collect_schema().names()
    if "samples" not in names:
        return config
    logged = pl.col("samples").is_not_null() & (pl.col("samples") > 0)
    per_sample_expr = (pl.col("tokens") / pl.col("samples")).mode().first() if "tokens" in names \
        else pl.lit(None, pl.Float64)
    modes = steps.lazy().filter(logged).select(pl.col("samples").mode().first(), per_sample_expr, pl.len()).collect()
    samples, per_sample, n = modes.row(0)
    if not n or samples is None:
        return config
    found: dict[str, Any] = {}
    if not config.global_batch and samples == int(samples):
        found["global_batch"] = int(samples)
        provenance["global_batch"] = {"from": "log", "where": "derived: the samples logged per step (the growth of "
                                                             "the log's sample counter)"}
    if not config.seq_len and per_sample is not None and per_sample == int(per_sample):
        found["seq_len"] = int(per_sample)
        provenance["seq_len"] = {"from": "log", "where": "derived: the tokens logged per step / the samples per step"}
    config = replace(config, **found)
    dp = config.dp or (config.n_devices // ((config.tp or 1) * (config.pp or 1) * (config.cp or 1))
                       if config.n_devices else None)
    if not config.grad_accum and config.global_batch and config.micro_batch and dp \
            and config.global_batch % (config.micro_batch * dp) == 0:
        provenance["grad_accum"] = {"from": "log", "where": f"derived: global batch {config.global_batch} / (micro "
                                                           f"batch {config.micro_batch} x data-parallel size {dp})"}
        config = replace(config, grad_accum=config.global_batch // (config.micro_batch * dp))
    return config


def devices_from_rates(steady: SteadyState | None, window: dict[str, float | None], config: RunConfig,
                       provenance: dict[str, Any], names: dict[str, list[str]],
                       warnings: list[str]) -> RunConfig:
    """The device count a per-device figure and a total imply, or the check of the stated one against them."""
    total = steady.tokens_per_s if steady is not None else None
    per_device = window.get("reported_tokens_per_s_per_device")
    if not total or not per_device:
        return config
    ratio = total / per_device
    nearest = round(ratio)
    said = (f"the log's per-device tokens/s ({_named(names, 'reported_tokens_per_s_per_device')}: "
            f"{per_device:,.6g}) against its total ({_named(names, 'tokens')} per step / step time: {total:,.6g})")
    if config.n_devices is None:
        if nearest >= 1 and abs(ratio - nearest) <= INTEGER_TOLERANCE * nearest:
            provenance["n_devices"] = {"from": "log", "where": f"derived: {said} = {ratio:.3f}"}
            return replace(config, n_devices=nearest)
        return config
    if abs(ratio / config.n_devices - 1) > MISMATCH:
        warnings.append(f"{said} gives {ratio:.2f} devices, not the {config.n_devices} the run states: one of those "
                        "keys does not mean what it was read as (per device or total), or the device count is off")
    return config


def _named(names: dict[str, list[str]], column: str) -> str:
    keys = names.get(column) or []
    return ", ".join(f"`{k}`" for k in keys) if keys else column


def samples_per_s(config: RunConfig, steady: SteadyState | None, steps: pl.DataFrame | pl.LazyFrame | None = None,
                  warnings: list[str] | None = None) -> ResultRecord | None:
    """samples/s over the steady window, labelled derived: the median of each step's samples / its step time where
    the steps count their samples (a printed samples/s the step time was derived from is given back as printed),
    else global batch / median step time. A stated global batch that is not the samples the steps count is said."""
    if steady is None or not steady.step_time_s_median:
        return None
    counted = _counted_samples(steps, steady) if steps is not None else None
    if counted is not None:
        per_step, value = counted
        if config.global_batch and warnings is not None and abs(per_step / config.global_batch - 1) > MISMATCH:
            warnings.append(f"the log counts {per_step:,.6g} samples per step but states a global batch of "
                            f"{config.global_batch:,}: samples/s is over the samples it counts (one rank's, if "
                            "each rank counts its own)")
        note = "derived: median over the steady window of each step's samples (as the log counts them) / its step time"
    elif config.global_batch:
        value = config.global_batch / steady.step_time_s_median
        note = (f"derived: global batch {config.global_batch:,} / median step time "
                f"{steady.step_time_s_median:.6g} s")
    else:
        return None
    return ResultRecord(metric=Metric.SAMPLES_PER_S.value, value=value, unit=Metric.SAMPLES_PER_S.unit,
                        evidence="derived", locator="steady-state window", note=note)


def _counted_samples(steps: pl.DataFrame | pl.LazyFrame, steady: SteadyState) -> tuple[float, float] | None:
    """(median samples per step, median samples / step time) over the steady window's steps that count their
    samples; None when none does."""
    if "samples" not in steps.collect_schema().names() or steady.first_step is None or steady.last_step is None:
        return None
    window = pl.col("step").is_between(steady.first_step, steady.last_step) & (pl.col("samples") > 0) \
        & (pl.col("step_time_s") > 0)
    per_step = orderstats.quantile(steps.lazy(), pl.col("samples"), 0.5, window)
    rate = orderstats.quantile(steps.lazy(), pl.col("samples") / pl.col("step_time_s"), 0.5, window)
    return (per_step, rate) if per_step is not None and rate is not None else None
