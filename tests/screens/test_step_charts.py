"""What the Runs page's step charts draw: every step of a short run, the envelope of a long one."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as hs

from perfledger import overlay_chart, step_charts


def run_steps(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "step": np.arange(1, n + 1),
        "step_time_s": 1.0 + rng.random(n) * 0.1,
        "loss": 10.0 - np.log1p(np.arange(n)) + rng.random(n) * 0.01,
        "phase": np.where(np.arange(n) < n // 10, "warmup", "steady"),
    })


def slice_extremes(frame: pl.DataFrame, value: str, buckets: int, first: int, last: int) -> pl.DataFrame:
    """The lowest and highest value in each of `buckets` equal slices of steps first..last, per phase."""
    return (frame.with_columns(((pl.col("step") - first) * buckets // (last - first + 1)).alias("slice"))
            .group_by("slice", "phase").agg(pl.col(value).min().alias("low"), pl.col(value).max().alias("high")))


def test_a_short_run_is_drawn_whole() -> None:
    steps = run_steps(3_000)
    chart = step_charts.step_times(steps)
    assert _points(chart).height == 3_000
    assert chart.to_dict()["title"] == {"text": "step time"}  # no steady window: no band, and no line saying one


def test_the_bench_logs_2_4_million_steps_are_drawn_as_at_most_two_points_per_slice_and_phase() -> None:
    """Every step of the 1 GB bench log made a 250 MB chart message, which Streamlit refused (200 MB)."""
    steps = run_steps(2_442_400)
    chart = step_charts.step_times(steps)
    assert _points(chart).height <= 2 * step_charts.STEP_BUCKETS * 2  # two phases
    assert any("of 2,442,400 steps drawn" in line for line in chart.to_dict()["title"]["subtitle"])
    assert step_charts.loss_curve(steps).data.height <= 2 * step_charts.STEP_BUCKETS


def test_a_single_stall_in_a_long_run_stays_on_the_chart() -> None:
    steps = run_steps(500_000).with_columns(
        pl.when(pl.col("step") == 312_345).then(45.0).otherwise(pl.col("step_time_s")).alias("step_time_s"),
        pl.when(pl.col("step") == 312_345).then(pl.lit("stall")).otherwise(pl.col("phase")).alias("phase"))
    drawn = step_charts.envelope(steps, "step_time_s", by=("phase",))
    assert drawn.filter(pl.col("phase") == "stall").select("step", "step_time_s").rows() == [(312_345, 45.0)]


@settings(max_examples=25, deadline=None)
@given(n=hs.integers(1, 30_000), buckets=hs.integers(1, 400), seed=hs.integers(0, 2**32 - 1))
def test_the_envelope_keeps_each_slices_lowest_and_highest_step_time(n: int, buckets: int, seed: int) -> None:
    steps = run_steps(n, seed).with_columns(pl.col("step") * 3)  # steps need not start at 1 or be contiguous
    drawn = step_charts.envelope(steps, "step_time_s", by=("phase",), buckets=buckets)
    assert drawn["step"].is_sorted() and drawn.height <= n and drawn.is_duplicated().sum() == 0
    if n <= 2 * buckets:
        assert drawn.equals(steps)
        return
    assert drawn.height <= 2 * buckets * 2
    assert drawn.join(steps, on=drawn.columns, how="anti").height == 0  # only real rows
    span = (steps["step"].min(), steps["step"].max())
    want = slice_extremes(steps, "step_time_s", buckets, *span)
    got = slice_extremes(drawn, "step_time_s", buckets, *span)
    assert got.sort("slice", "phase").equals(want.sort("slice", "phase"))


def test_every_step_chart_draws_at_most_the_bound_whatever_its_series_and_keeps_the_spike() -> None:
    """Two series of 4,000 envelope rows each made altair raise MaxRowsError (8,000 > 5,000) from ~2,600 steps."""
    steps = run_steps(200_000).with_columns(
        tokens_per_s_per_device=1_000.0 / pl.col("step_time_s"), reported_tokens_per_s_per_device=990.0 / pl.col("step_time_s"),
        run=pl.when(pl.col("step") % 7 == 0).then(pl.lit("#2 b.log")).otherwise(pl.lit("#1 a.log")))
    steps = steps.with_columns(pl.when(pl.col("step") == 123_457).then(1.0).otherwise(pl.col("tokens_per_s_per_device"))
                               .alias("tokens_per_s_per_device"))
    figure = step_charts.step_figure(steps, "tokens_per_s_per_device", "Tokens/s per device", "tokens/s per device",
                                printed="reported_tokens_per_s_per_device")
    overlaid = overlay_chart.overlay(pl.concat([steps.with_columns(run=pl.lit(f"#{i} run.log")) for i in range(6)]),
                              "tokens_per_s_per_device", "step", "Tokens/s per device", "tokens/s per device")
    for chart in (figure, overlaid, step_charts.step_times(steps.with_columns(phase=pl.col("run")))):
        chart.to_dict()  # altair's own row limit
        assert all(layer.data.height <= step_charts.MOST_POINTS for layer in chart.layer)
    assert _points(figure).filter(pl.col("value") == 1.0)["step"].to_list() == [123_457]


def _points(chart: Any) -> pl.DataFrame:
    """The rows a per-step chart draws (its second layer; the first is the steady window's band)."""
    return chart.layer[1].data
