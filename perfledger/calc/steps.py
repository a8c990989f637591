"""Per-step figures of a run: what its steady-state summary computes over the window, step by step.

    tokens_seen             = running sum of tokens per step                                  (tokens)
    elapsed_s               = running sum of step times: the wall clock since the first step  (s)
    tokens_per_s_per_device = tokens / step_time_s / devices                                  (tokens/s/device)
    model_tflops_per_device = tokens_per_s_per_device * flops_per_token / 1e12                (TFLOP/s/device)
    mfu                     = model_tflops_per_device / peak_tflops                           (fraction)

A figure whose input the run lacks (devices, FLOPs per token, the peak) stays empty, never guessed.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)  # a run's steps held, or read in streaming passes
STEP_FIGURES = ("tokens_seen", "elapsed_s", "tokens_per_s_per_device", "model_tflops_per_device", "mfu")


def _empty() -> pl.Expr:
    return pl.lit(None, pl.Float64)


def step_figures(steps: Frame, devices: int | None, flops_per_token: float | None,
                 peak_tflops: float | None) -> Frame:
    """`steps` (columns tokens, step_time_s) with the four STEP_FIGURES columns added (Float64):

        tokens_seen             = cumulative sum of tokens
        tokens_per_s_per_device = tokens / step_time_s / devices
        model_tflops_per_device = tokens_per_s_per_device * flops_per_token / 1e12
        mfu                     = model_tflops_per_device / peak_tflops

    >>> f = step_figures(pl.DataFrame({"tokens": [8192, 8192], "step_time_s": [2.0, 4.0]}), 8, 1e9, 1000.0)
    >>> f["tokens_per_s_per_device"].to_list(), f["mfu"].to_list()
    ([512.0, 256.0], [0.000512, 0.000256])
    """
    tps = pl.col("tokens") / pl.col("step_time_s") / devices if devices else _empty()
    model_tflops = tps * flops_per_token / 1e12 if flops_per_token else _empty()
    return steps.with_columns(
        pl.col("tokens").fill_null(0).cum_sum().cast(pl.Float64).alias("tokens_seen"),
        pl.col("step_time_s").cast(pl.Float64).fill_nan(None).fill_null(0).cum_sum().alias("elapsed_s"),
        tps.cast(pl.Float64).alias("tokens_per_s_per_device"),
        model_tflops.cast(pl.Float64).alias("model_tflops_per_device"),
        (model_tflops / peak_tflops if peak_tflops else _empty()).cast(pl.Float64).alias("mfu"),
    )


def peak_of(model_tflops_per_device: float | None, mfu: float | None) -> float | None:
    """The peak (TFLOP/s/device) a stored MFU was divided by: model TFLOP/s / MFU; None without both.

    >>> peak_of(835.6, 0.845)
    988.8757396449705
    """
    return model_tflops_per_device / mfu if model_tflops_per_device and mfu else None
