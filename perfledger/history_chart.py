"""The History page's chart: a figure run after run per configuration, with its levels, change points, regressions
and reference line (alt.LayerChart; no data access). Every configuration is named whole in the legend (a click on
one hides or shows it), the time axis says the year, and the axes leave room round the first and last points."""

from __future__ import annotations

import altair as alt
import polars as pl

from perfledger.chart_colours import RUN_COLOURS
from perfledger.charts import EDGE_PX, TIP, Drawn, _drawn, _read, _titled

PLOT_PX, LEGEND_LINE_PX = 360, 26


def history_lines(points: pl.DataFrame, *, by: str, value_title: str) -> Drawn:
    """A figure run after run per configuration (x: the run's date, or its framework version), the fitted levels
    dashed, a ring on each run that starts a new level (a change point), a red triangle on each regressed run, and
    the reference line where one is asked for; `points` from perfledger.views.history.chart_points (a share reads in
    %: the rows' unit says fraction)."""
    data = _read(points, "value").with_columns(pl.col("date").dt.strftime("%Y-%m-%dT%H:%M:%SZ")).select(
        "x", "date", "configuration", "run id", "file", "value", "level", "regression", "change point",
        "worse than before", "reference line", "framework version")
    x = (alt.X("x:T", title="date the run ran (UTC)", scale=alt.Scale(padding=EDGE_PX),
               axis=alt.Axis(format="%b %Y", labelOverlap=True)) if by == "date"
         else alt.X("x:N", title="framework version", scale=alt.Scale(padding=0.5)))
    y = alt.Y("value:Q", title=value_title, scale=alt.Scale(zero=False, nice=True))
    hidden = alt.selection_point(name="hidden", fields=["configuration"], bind="legend", toggle="true", empty=False)
    colour = alt.Color("configuration:N", title="configuration (click to hide or show)", scale=alt.Scale(range=list(RUN_COLOURS)),
                       legend=alt.Legend(orient="top", direction="vertical", labelLimit=0, titleLimit=0, symbolLimit=0))
    base = alt.Chart(data).encode(x=x, color=colour, opacity=alt.condition(hidden, alt.value(0.0), alt.value(1.0)))
    tips = ["configuration", "date", "run id", "file", alt.Tooltip("value:Q", format=TIP, title=value_title),
            alt.Tooltip("worse than before:Q", format=TIP, title="worse than before (%)"), "framework version"]
    layers = [base.mark_line(point=True).encode(y=y, tooltip=tips).add_params(hidden),
              base.mark_line(strokeDash=[4, 3], opacity=0.6).encode(y=alt.Y("level:Q", title=value_title)),
              base.transform_filter("datum['change point']").mark_point(size=220, strokeWidth=2).encode(y=y),
              base.transform_filter("datum.regression").mark_point(shape="triangle-down", size=220, filled=True,
                                                                   opacity=1).encode(
                  y=y, tooltip=tips, color=alt.value("#d32f2f"))]
    if data["reference line"].is_not_null().any():
        layers.append(alt.Chart(data).mark_rule(strokeDash=[8, 4], color="#616161").encode(
            y=alt.Y("max(reference line):Q", title=value_title)))
    subtitles = ["dashed: the levels found by step detection; ring: a new level starts; red triangle: a regression"]
    configurations = data["configuration"].n_unique()  # Streamlit fits the legend in the height: add its lines
    return _drawn(alt.LayerChart(layer=layers).properties(title=_titled(value_title + " run after run", *subtitles),
                                                          height=PLOT_PX + LEGEND_LINE_PX * (configurations + 1)))

