"""Runs overlaid on the same axes (perfledger.views.runs.overlay_steps): one figure for several runs against step,
tokens seen or wall clock. A cross-hair lists every run's value at the pointer's x, by run name; the legend names
each run whole, and a click on a run's entry hides it (another click shows it again); the wheel zooms the x axis
and a drag pans it; the main run is drawn thicker; each run has its own colour. Frame -> alt.LayerChart, no data
access."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import polars as pl

from perfledger import names, numbers
from perfledger.chart_colours import RUN_COLOURS
from perfledger.charts import Drawn, _drawn
from perfledger.step_charts import (
    MOST_POINTS,
    bounded,
    drawn_line,
    outlier_line,
    outlier_marks,
    pinned,
    steady_axis,
    titled,
)

OVERLAY_X = {"step": ("step", "step"), "tokens": ("tokens_seen", "tokens seen"),
             "time": ("elapsed_s", "wall clock (s since the first step)")}
READOUT_POINTS = 300  # x positions the cross-hair reads every run at
MAIN_WIDTH, OTHER_WIDTH = 3.0, 1.5
# Streamlit fits a whole chart, its legend too, in the height given: each legend line is added, so the plot keeps
# PLOT_PX whatever the number of runs named above it.
PLOT_PX, LEGEND_LINE_PX = 260, 22


def overlay(frame: pl.DataFrame, value: str, x: str, title: str, y_title: str, *, main: str | None = None,
            log: bool = False, steady: bool = True) -> Drawn:
    """One figure of several runs (`run`: each run's label) against `x`; `main` (default: the first run) drawn
    thicker. The y axis of a `steady` figure spans the middle 96% of the values, a point beyond it drawn at its
    edge and marked (a warm-up spike no longer sets the scale); a share in %."""
    x_col, x_title = OVERLAY_X.get(x, OVERLAY_X["step"])
    data = _as_read(frame.select(list(dict.fromkeys(["run", "step", x_col]))), frame[value], value)
    runs = data["run"].unique(maintain_order=True).to_list()
    main = main if main in runs else (runs[0] if runs else None)
    share = MOST_POINTS // max(1, len(runs))  # each run its own slices of its own steps: runs differ in length
    drawn = pl.concat([bounded(data.filter(pl.col("run") == r), "value", points=share) for r in runs]) if runs else data
    values = drawn["value"]
    middle = values.filter(values.is_between(values.quantile(0.02), values.quantile(0.98))) if steady else values
    axis = steady_axis(values, middle, log=log)
    drawn = pinned(drawn, "value", axis)
    colours = alt.Scale(domain=runs, range=[RUN_COLOURS[i % len(RUN_COLOURS)] for i in range(len(runs))])
    hidden = alt.selection_point(name="hidden", fields=["run"], bind="legend", toggle="true", empty=False)
    crosshair = alt.selection_point(name="crosshair", nearest=True, on="pointerover", fields=[x_col], empty=False,
                                    clear="pointerout")
    x_enc = alt.X(f"{x_col}:Q", title=x_title)
    y_enc = alt.Y("shown:Q", title=y_title, scale=axis.scale())
    colour = alt.Color("run:N", title="run (click to hide or show)", scale=colours,
                       legend=alt.Legend(orient="top", direction="vertical", labelLimit=0, titleLimit=0,
                                         symbolType="stroke"))
    lines = alt.Chart(drawn).mark_line().encode(
        x=x_enc, y=y_enc, color=colour,
        strokeWidth=alt.condition(f"datum.run == {json.dumps(main or '')}", alt.value(MAIN_WIDTH), alt.value(OTHER_WIDTH)),
        opacity=alt.condition(hidden, alt.value(0.0), alt.value(1.0)),
    ).add_params(hidden, alt.selection_interval(name="zoom", bind="scales", encodings=["x"]))
    readout = _readout(drawn, x_col, runs)
    rule = alt.Chart(readout).mark_rule(color="#666").encode(
        x=x_enc, opacity=alt.condition(crosshair, alt.value(0.7), alt.value(0.0)),
        tooltip=[alt.Tooltip(f"{x_col}:Q", title=x_title, format=numbers.TOOLTIP_FORMAT),
                 *(alt.Tooltip(f"r{i}:Q", title=run, format=numbers.TOOLTIP_FORMAT) for i, run in enumerate(runs))],
    ).add_params(crosshair)
    points = alt.Chart(pinned(_long(readout, x_col, runs), "value", axis)).mark_point(filled=True, size=50).encode(
        x=x_enc, y=y_enc, color=alt.Color("run:N", scale=colours, legend=None),
    ).transform_filter(crosshair)
    subtitle = [f"{len(runs)} runs by {x_title}; point at the chart to read every run at that x; wheel: zoom, drag: pan",
                drawn_line(drawn, data, "value"), outlier_line(drawn, names.PERCENT if names.is_share(value) else "")]
    return _drawn(alt.LayerChart(layer=[lines, rule, points, outlier_marks(drawn, x_enc, y_title, y_title, axis)])
                  .properties(title=titled(title, subtitle), height=PLOT_PX + LEGEND_LINE_PX * (len(runs) + 1)))


def _as_read(data: pl.DataFrame, figure: pl.Series, name: str) -> pl.DataFrame:
    """The runs' rows with `value`: the figure as it reads, a share in %, at the rule's precision."""
    value = pl.col("value").fill_nan(None)
    value = numbers.percent_expr(value) if names.is_share(name) else value
    return data.with_columns(figure.alias("value")).with_columns(numbers.derived_expr(value).alias("value"))


def _readout(drawn: pl.DataFrame, x_col: str, runs: list[str]) -> pl.DataFrame:
    """At READOUT_POINTS x positions across the runs, each run's value at its last point at or before x (none
    before its first or after its last): column r0, r1, ... per run, in `runs`' order."""
    xs = drawn[x_col].drop_nulls().cast(pl.Float64).unique().sort()
    if xs.len() > READOUT_POINTS:
        xs = xs.gather(np.linspace(0, xs.len() - 1, READOUT_POINTS).round().astype(int))
    grid = pl.DataFrame({x_col: xs})
    for i, run in enumerate(runs):
        one = (drawn.filter(pl.col("run") == run).select(pl.col(x_col).cast(pl.Float64), pl.col("value").alias(f"r{i}"))
               .drop_nulls().sort(x_col))
        if one.height == 0:
            grid = grid.with_columns(pl.lit(None, pl.Float64).alias(f"r{i}"))
            continue
        inside = pl.col(x_col).is_between(one[x_col].min(), one[x_col].max())
        grid = grid.join_asof(one, on=x_col, strategy="backward").with_columns(
            pl.when(inside).then(pl.col(f"r{i}")).alias(f"r{i}"))
    return grid


def _long(readout: pl.DataFrame, x_col: str, runs: list[str]) -> pl.DataFrame:
    """The readout as one row per x and run (the points the cross-hair marks)."""
    if not runs:
        return readout.with_columns(pl.lit(None, pl.Float64).alias("value"), pl.lit("").alias("run")).head(0)
    return pl.concat([readout.select(x_col, pl.col(f"r{i}").alias("value"), pl.lit(run).alias("run"))
                      for i, run in enumerate(runs)]).drop_nulls("value")
