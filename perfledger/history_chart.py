"""The History page's chart: a figure run after run per configuration, with its levels, change points, regressions
and reference line (alt.LayerChart; no data access)."""

from __future__ import annotations

import altair as alt
import polars as pl

from perfledger.charts import Drawn, _drawn, _titled


def history_lines(points: pl.DataFrame, *, by: str, value_title: str) -> Drawn:
    """A figure run after run per configuration (x: the run's date, or its framework version), the fitted levels
    dashed, a ring on each run that starts a new level (a change point), a red triangle on each regressed run, and
    the reference line where one is asked for; `points` from perfledger.views.history.chart_points."""
    data = points.with_columns(pl.col("date").dt.strftime("%Y-%m-%dT%H:%M:%SZ")).select(
        "x", "date", "configuration", "run id", "file", "value", "level", "regression", "change point",
        "worse than before", "reference line", "framework version")
    x = alt.X("x:T", title="date the run ran (UTC)") if by == "date" else alt.X("x:N", title="framework version")
    y = alt.Y("value:Q", title=value_title, scale=alt.Scale(zero=False))
    base = alt.Chart(data).encode(x=x, color=alt.Color("configuration:N", legend=alt.Legend(orient="top",
                                                                                            labelLimit=800)))
    tips = ["configuration", "date", "run id", "file", alt.Tooltip("value:Q", format=",.4~g"),
            alt.Tooltip("worse than before:Q", format=".2%"), "framework version"]
    layers = [base.mark_line(point=True).encode(y=y, tooltip=tips),
              base.mark_line(strokeDash=[4, 3], opacity=0.6).encode(y=alt.Y("level:Q", title=value_title)),
              base.transform_filter("datum['change point']").mark_point(size=220, strokeWidth=2).encode(y=y),
              base.transform_filter("datum.regression").mark_point(shape="triangle-down", size=220, filled=True,
                                                                   opacity=1).encode(
                  y=y, tooltip=tips, color=alt.value("#d32f2f"))]
    if data["reference line"].is_not_null().any():
        layers.append(alt.Chart(data).mark_rule(strokeDash=[8, 4], color="#616161").encode(
            y=alt.Y("max(reference line):Q", title=value_title)))
    subtitles = ["dashed: the levels found by step detection; ring: a new level starts; red triangle: a regression"]
    return _drawn(alt.LayerChart(layer=layers).properties(title=_titled(value_title + " run after run", *subtitles),
                                                          height=420))
