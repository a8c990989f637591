"""Frame -> alt.Chart builders; no data access. Every accelerator keeps one colour on every chart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt
import polars as pl

from perfledger import names, numbers
from perfledger.chart_colours import FALLBACK_COLOUR, Colours, bundled_colours, series_colours
from perfledger.views.remembered import by_content

_ROW_AXIS = alt.Axis(labelLimit=420, labelOverlap=False)  # bar labels are read, never elided or dropped
# A long row title, set upright above the labels and ending at the axis: turned along the axis it lay over them.
_ROW_TITLE_ABOVE = alt.Axis(labelLimit=420, labelOverlap=False, titleAngle=0, titleAlign="right", titleBaseline="bottom",
                            titleX=0, titleY=-6)
Drawn = alt.Chart | alt.LayerChart  # what a builder returns: one chart, or charts layered


def _drawn(chart: Drawn) -> Drawn:
    """States the type of an altair builder chain (altair's methods are untyped, so mypy sees Any)."""
    return chart


@by_content(keep=64)
def spec(build: Callable[..., Drawn], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The Vega-Lite spec `build(*args, **kwargs)` draws, remembered by the content of its frames and arguments:
    building an Altair chart validates every channel against the schema, 0.1-0.3 s a chart on every render. The
    caller must not change the dict (Streamlit copies it before it changes anything)."""
    drawn: dict[str, Any] = build(*args, **kwargs).to_dict()
    return drawn


def accelerator_scale(ids: list[str], colours: Colours | None = None) -> alt.Scale:
    """A colour scale fixing each accelerator id to its catalog colour (`colours`, default the bundled catalog's;
    an id without one is grey)."""
    domain = sorted({i for i in ids if i})
    by_id = dict(bundled_colours() if colours is None else colours)
    return alt.Scale(domain=domain, range=[by_id.get(i, FALLBACK_COLOUR) for i in domain])


def _colour(frame: pl.DataFrame, column: str, colours: Colours | None) -> alt.Color:
    return alt.Color(f"{column}:N", scale=accelerator_scale(frame[column].drop_nulls().to_list(), colours),
                     title="accelerator")


FEW_BARS = 40  # up to this many bars carry their value as a label
EDGE_PX = 16  # room a line chart leaves beyond its first and last points, so neither is cut in half
# A bar chart draws at most this many bars: 2,161 published efficiencies made a 39,000 px chart that took the
# browser seconds to lay out, and no one reads past the first screens of it; the table keeps every row.
MOST_BARS = 60


def _most_bars(data: pl.DataFrame, value: str | None, *, spread: str | None = None) -> tuple[pl.DataFrame, str]:
    """The rows a bar chart draws and the words saying so ("" when every row is drawn): at most MOST_BARS, the
    highest by `value` (with `spread`, each group's highest before any group's second, so that every accelerator
    shows), or the first in the table's order when `value` is None."""
    if data.height <= MOST_BARS:
        return data, ""
    if value is None:
        return data.head(MOST_BARS), f"the first {MOST_BARS} of {data.height:,} in the table's order"
    if spread is None:
        return (data.sort(value, descending=True, nulls_last=True, maintain_order=True).head(MOST_BARS),
                f"the {MOST_BARS} highest of {data.height:,} (the table lists every row)")
    turn = pl.col(value).rank("ordinal", descending=True).over(spread).alias("_turn")
    picked = data.with_columns(turn).sort(["_turn", value], descending=[False, True], nulls_last=True,
                                          maintain_order=True).head(MOST_BARS).drop("_turn")
    return picked, f"{MOST_BARS} of {data.height:,}: each {spread}'s highest first (the table lists every row)"


def _titled(text: str, *subtitles: str) -> alt.TitleParams:
    lines = [line for line in subtitles if line]
    return alt.TitleParams(text, subtitle=lines) if lines else alt.TitleParams(text)


def _read(frame: pl.DataFrame, *stored: str) -> pl.DataFrame:
    """A chart's rows as every surface reads them (perfledger.numbers): shares in %, metric ids named, each figure
    but the `stored` ones at the reading rule (tooltips and bar labels print what the rows hold)."""
    return numbers.rounded(numbers.for_reading(frame), stored)


TIP = numbers.TOOLTIP_FORMAT


def _labelled(bars: alt.Chart, rows: int, value: str, fmt: str = TIP) -> Drawn:
    """`bars` with each bar's value printed at its end when there are few enough to read."""
    if rows > FEW_BARS:
        return _drawn(bars)
    text = bars.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text(f"{value}:Q", format=fmt),
                                                                   color=alt.value("#333"))
    return _drawn(bars + text)


def speedup_bars(frame: pl.DataFrame) -> Drawn:
    """Speedup (x) per model, computed and stored side by side, with a rule at 1x; the bars in the table's order."""
    data, drawn = _most_bars(_read(frame).filter(pl.col("speedup (x)").is_not_null()).with_columns(
        pl.concat_str([pl.col("model"), pl.col("candidate devices").cast(pl.String).fill_null("?") + pl.lit(" devices")],
                      separator=" · ").alias("row")).select(
        "row", "model", "baseline", "candidate", "speedup (x)", "kind", "caveats", "source"), None)
    title = _titled("Speedup of the candidate over the baseline", "dotted rule: 1x (no speedup)", drawn)
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", title="model · candidate devices", sort=None, axis=_ROW_AXIS),
        x=alt.X("speedup (x):Q", title="speedup (x, candidate / baseline)"),
        color=alt.Color("kind:N", title="figure", legend=alt.Legend(orient="top", labelLimit=0)),
        yOffset="kind:N",
        tooltip=["model", "baseline", "candidate", alt.Tooltip("speedup (x):Q", format=TIP), "kind", "caveats",
                 "source"],
    )
    one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 3], color="#888").encode(
        x=alt.X("x:Q", title="speedup (x, candidate / baseline)"))
    return _drawn((_labelled(bars, data.height, "speedup (x)") + one).properties(title=title, height=alt.Step(16)))


def head_to_head_bars(frame: pl.DataFrame) -> Drawn:
    """The second accelerator's figure over the first's, one bar per pair of rows (the Head to head table), coloured
    by whether the pair is like for like, with a rule at 1x."""
    data, drawn = _most_bars(_read(frame).filter(pl.col("ratio (second / first)").is_not_null()).with_columns(
        pl.concat_str([pl.col("pair"), pl.col("model").fill_null("?"), pl.col("metric"),
                       pl.lit("#") + pl.col("first result id").cast(pl.String) + pl.lit("/")
                       + pl.col("second result id").cast(pl.String)], separator=" · ").alias("row"),
        pl.col("like for like").str.starts_with("like").replace_strict(
            {True: "like for like", False: "not like for like"}, return_dtype=pl.String).alias("verdict")).select(
        "row", "pair", "model", "metric", "ratio (second / first)", "like for like", "verdict", "caveats", "source"), None)
    x = alt.X("ratio (second / first):Q", title="ratio (x, second / first of the pair)")
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", title="pair (first vs second) · model · metric · result ids", sort=None, axis=_ROW_TITLE_ABOVE),
        x=x, color=alt.Color("verdict:N", title=None, scale=alt.Scale(
            domain=["like for like", "not like for like"], range=["#1f77b4", "#bdbdbd"]),
            legend=alt.Legend(orient="top", labelLimit=0)),
        tooltip=["pair", "model", "metric", alt.Tooltip("ratio (second / first):Q", format=TIP), "like for like",
                 "caveats", "source"],
    )
    one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 3], color="#888").encode(
        x=alt.X("x:Q", title="ratio (x, second / first of the pair)"))
    title = _titled("Second over first, per pair of stored results", "dotted rule: 1x (the same)", drawn)
    return _drawn((_labelled(bars, data.height, "ratio (second / first)") + one).properties(
        title=title, height=alt.Step(18)))


def accelerator_bars(frame: pl.DataFrame, title: str, colours: Colours | None = None) -> Drawn:
    """One bar per stored figure, coloured by accelerator; `title` is the normalised unit (the x axis; a share reads
    in %). The bars and the tooltip print the normalised figure at the reading rule (",.4~r" had shown 16,913
    tokens/s as 16,910), the stored value as stored."""
    data, drawn = _most_bars(_read(frame, "value").filter(pl.col("normalized").is_not_null()).with_columns(
        pl.concat_str([pl.col("accelerator"), pl.col("model"), pl.col("devices").cast(pl.String).fill_null("?") + pl.lit(" dev"),
                       pl.col("precision").fill_null("?"), pl.col("source").fill_null("?"),
                       pl.lit("#") + pl.col("result id").cast(pl.String)], separator=" · ").alias("row")
    ).select("row", "accelerator", "accelerator name", "model", "devices", "precision", "framework", "value",
             "normalized", "source", "result id"), "normalized", spread="accelerator")
    title = title.replace(names.FRACTION, names.PERCENT)
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · devices · precision · source · result id",
                axis=_ROW_TITLE_ABOVE),
        x=alt.X("normalized:Q", title=title),
        color=_colour(data, "accelerator", colours),
        tooltip=["accelerator name", "model", "devices", "precision", "framework",
                 alt.Tooltip("value:Q", format=TIP, title="value (as stored)"),
                 alt.Tooltip("normalized:Q", format=TIP, title=title), "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "normalized").properties(
        title=_titled(f"{title} per stored figure, by accelerator", drawn), height=alt.Step(20)))


# A long series name is drawn on two lines, broken at the first " · " after 60 characters, not cut short.
_WRAPPED = "split(replace(datum.label, /^(.{60,}?) · /, '$1\\n'), '\\n')"


def scaling_lines(points: pl.DataFrame) -> Drawn:
    """Throughput vs devices per series (each series its own colour and shape, named in the legend), with each
    series' ideal-linear line dashed; `points` from perfledger.views.scaling.points_by_devices: where a series
    holds several results at a device count, the point is their median and a rule spans their range."""
    thr = "throughput (tokens/s, all devices)"
    data = _read(points.select("series", "accelerator", "devices", thr, "lowest (tokens/s)", "highest (tokens/s)",
                               "ideal linear (tokens/s)", "scaling efficiency", "results", "source", "result id"))
    devices = sorted(int(d) for d in data["devices"].drop_nulls().unique().to_list())
    base = alt.Chart(data).encode(x=alt.X("devices:Q", scale=alt.Scale(type="log", base=2, padding=EDGE_PX),
                                          title="devices (count, log scale)", axis=alt.Axis(values=devices, format=",d")),
                                  detail="series:N")
    y_title = "throughput (tokens/s, all devices, log scale)"
    y = alt.Y(f"{thr}:Q", scale=alt.Scale(type="log"), title=y_title)
    domain, colours = series_colours(data)
    by_series = alt.Color("series:N", title="series", scale=alt.Scale(domain=domain, range=colours),
                          legend=alt.Legend(orient="top", direction="vertical", labelLimit=1200, labelExpr=_WRAPPED))
    measured = base.mark_line(point=True).encode(
        y=y, color=by_series, shape=alt.Shape("series:N", legend=None),
        tooltip=["series", "devices", alt.Tooltip(f"{thr}:Q", format=TIP, title="throughput (median, tokens/s)"),
                 alt.Tooltip("lowest (tokens/s):Q", format=TIP), alt.Tooltip("highest (tokens/s):Q", format=TIP),
                 alt.Tooltip("scaling efficiency:Q", format=TIP, title="scaling efficiency (median, %)"), "results",
                 "source", "result id"],
    )
    ideal = base.mark_line(strokeDash=[4, 3], opacity=0.5).encode(
        y=alt.Y("ideal linear (tokens/s):Q", title=y_title), color=by_series)
    layers = [ideal, measured]
    subtitles = ["dashed: ideal linear from the series' smallest device count"]
    if (data["results"] > 1).any():
        layers.append(base.transform_filter("datum.results > 1").mark_rule(opacity=0.6).encode(
            y=alt.Y("lowest (tokens/s):Q", title=y_title), y2="highest (tokens/s):Q", color=by_series))
        subtitles.append("several results at one device count: their median, the rule spanning lowest to highest")
    return _drawn(alt.LayerChart(layer=layers).properties(
        title=_titled("Throughput vs devices, per series", *subtitles), height=480))


def efficiency_bars(frame: pl.DataFrame, colours: Colours | None = None) -> Drawn:
    data, drawn = _most_bars(_read(frame).filter(pl.col("scaling efficiency").is_not_null(), pl.col("kind").str.starts_with("stored")).with_columns(
        pl.concat_str([pl.col("accelerator"), pl.col("model"), pl.col("devices").cast(pl.String).fill_null("?")], separator=" · ").alias("row")
    ).select("row", "accelerator", "model", "devices", "scaling efficiency", "baseline", "source", "result id"),
        "scaling efficiency", spread="accelerator")
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · devices", axis=_ROW_AXIS),
        x=alt.X("scaling efficiency:Q", title="scaling efficiency (%, stored)"),
        color=_colour(data, "accelerator", colours),
        tooltip=["accelerator", "model", "devices", alt.Tooltip("scaling efficiency:Q", format=TIP, title="scaling efficiency (%)"),
                 "baseline", "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "scaling efficiency").properties(
        title=_titled("Scaling efficiency as published", drawn), height=alt.Step(18)))


def ratio_bars(frame: pl.DataFrame, colours: Colours | None = None) -> Drawn:
    data, drawn = _most_bars(_read(frame, "value").with_columns(
        pl.concat_str([pl.col("accelerator").fill_null("?"), pl.col("model").fill_null("?"), pl.col("result id").cast(pl.String)], separator=" · ").alias("row")
    ).select("row", "accelerator", "model", "devices", "value", "baseline", "source", "result id"), "value")
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · result", axis=_ROW_AXIS),
        x=alt.X("value:Q", title="stored ratio (x, against the source's baseline)"),
        color=_colour(data, "accelerator", colours),
        tooltip=["model", "accelerator", "devices", alt.Tooltip("value:Q", format=TIP), "baseline", "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "value").properties(
        title=_titled("Sensitivity ratios as published", drawn), height=alt.Step(18)))


def time_vs_devices(frame: pl.DataFrame) -> Drawn:
    """Time to train against devices, both on log axes ticked at the device counts and at 1, 2, 5 of each decade."""
    data = _read(frame)
    days = data["time (days)"].drop_nulls()
    x_ticks = sorted(int(d) for d in data["devices"].to_list())
    base = alt.Chart(data).encode(x=alt.X("devices:Q", scale=alt.Scale(type="log", base=2, padding=EDGE_PX),
                                          title="devices (count, log scale)", axis=alt.Axis(values=x_ticks, format=",d")))
    y_axis = alt.Axis(values=numbers.log_ticks(float(days.min()), float(days.max())), format=",~g") if days.len() else alt.Axis()  # type: ignore[arg-type]
    line = base.mark_line(point=True).encode(
        y=alt.Y("time (days):Q", scale=alt.Scale(type="log"), title="time to train (days, log scale)", axis=y_axis),
        tooltip=["devices", alt.Tooltip("time (days):Q", format=TIP), alt.Tooltip("time (h):Q", format=TIP),
                 alt.Tooltip("cost (USD):Q", format=TIP), "scaling", "basis"],
    )
    chosen = base.transform_filter("datum.chosen").mark_point(size=140, filled=True, color="#d62728").encode(
        y=alt.Y("time (days):Q", title="time to train (days, log scale)"))
    return _drawn((line + chosen).properties(
        title=alt.TitleParams("Time to train vs devices", subtitle="red: the chosen device count"), height=320))


def count_bars(frame: pl.DataFrame, column: str) -> Drawn:
    """Result rows per group, on a log axis (one group holds most rows; a linear axis hid the others)."""
    data = numbers.for_reading(frame).head(25)
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y(f"{column}:N", sort="-x", title=column, axis=_ROW_AXIS),
        x=alt.X("result rows:Q", scale=alt.Scale(type="log"), stack=None, title="result rows (count, log scale)"),
        tooltip=[column, "result rows", "sources", "runs"])
    return _drawn(_labelled(bars, data.height, "result rows", ",d").properties(title=f"Stored result rows by {column}",
                                                                               height=alt.Step(24)))


def mlperf_bars(frame: pl.DataFrame, colours: Colours | None = None) -> Drawn:
    """Each MLPerf result's score (time to train, minutes, lower is better) per benchmark, coloured by accelerator."""
    minutes = "time to train (min)"
    data, drawn = _most_bars(frame.filter(pl.col(minutes).is_not_null()).with_columns(
        pl.col("accelerator").fill_null("not in the catalog"),
        pl.concat_str([pl.col("benchmark").fill_null("?"), pl.col("submitter").fill_null("?"),
                       pl.col("accelerator × count").fill_null("?"), pl.lit("run ") + pl.col("run").cast(pl.String)],
                      separator=" · ").alias("row"),
    ).select("row", "benchmark", minutes, "submitter", "system", "accelerator", "accelerator × count", "round", "run"),
        None)
    bars = alt.Chart(_read(data)).mark_bar().encode(
        y=alt.Y("row:N", sort=None, title="benchmark · submitter · accelerators · run", axis=_ROW_TITLE_ABOVE),
        x=alt.X(f"{minutes}:Q", title="time to train (min, MLPerf's score; lower is better)"),
        color=_colour(data, "accelerator", colours),
        tooltip=["benchmark", alt.Tooltip(f"{minutes}:Q", format=TIP), "submitter", "system", "accelerator × count",
                 "round", "run"])
    return _drawn(_labelled(bars, data.height, minutes).properties(
        title=_titled("MLPerf Training: time to train per result", drawn), height=alt.Step(22)))
