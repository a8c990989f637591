"""A run's wall clock as one stacked bar: each goodput part (perfledger.calc.goodput) a segment, in the order the
parts are listed; no data access."""

from __future__ import annotations

import altair as alt
import polars as pl

from perfledger.calc.goodput import PART_LABELS, PARTS
from perfledger.charts import Drawn, _drawn, _titled

# productive green, lost time in warm greys and reds: the eye finds the productive share first
PART_COLOURS = {"productive_s": "#2e7d32", "warmup_s": "#ffb300", "stalls_s": "#e53935", "restarts_s": "#8e24aa",
                "evaluation_s": "#1e88e5", "checkpoint_s": "#00897b", "outside_steps_s": "#9e9e9e"}


def goodput_bar(parts: pl.DataFrame, *, wall_s: float) -> Drawn:
    """`parts` from perfledger.views.verdict_text.goodput_frame (part, key, seconds, share, marked by): one bar,
    a segment per part with its seconds and share in the tooltip."""
    order = {key: i for i, key in enumerate(PARTS)}
    data = parts.filter(pl.col("seconds") > 0).with_columns(
        pl.col("key").replace_strict(order, default=len(order)).alias("order"), pl.lit("wall clock").alias("run"))
    labels = [PART_LABELS[k] for k in PARTS]
    colour = alt.Color("part:N", sort=labels, legend=alt.Legend(orient="bottom", title=None, labelLimit=300),
                       scale=alt.Scale(domain=labels, range=[PART_COLOURS[k] for k in PARTS]))
    bar = alt.Chart(data).mark_bar(height=28).encode(
        x=alt.X("sum(seconds):Q", title="seconds of wall clock", stack="zero"),
        y=alt.Y("run:N", title=None, axis=None), color=colour, order=alt.Order("order:Q"),
        tooltip=["part", alt.Tooltip("seconds:Q", format=",.1f"), alt.Tooltip("share:Q", format=".1%"),
                 "marked by"])
    # the height holds the title, the bar, its axis and the legend: the dashboard fits the whole chart into it
    return _drawn(bar.properties(title=_titled(f"Where the wall clock went ({wall_s:,.0f} s)"), height=190))
