"""Frame -> alt.Chart builders; no data access. Every accelerator keeps one colour on every chart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt
import polars as pl

from perfledger.chart_colours import ACCELERATOR_COLOURS, FALLBACK_COLOUR, series_colours
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


def accelerator_scale(ids: list[str]) -> alt.Scale:
    """A colour scale fixing each accelerator id to its colour (unknown ids are grey)."""
    domain = sorted({i for i in ids if i})
    return alt.Scale(domain=domain, range=[ACCELERATOR_COLOURS.get(i, FALLBACK_COLOUR) for i in domain])


def _colour(frame: pl.DataFrame, column: str, title: str = "accelerator") -> alt.Color:
    return alt.Color(f"{column}:N", scale=accelerator_scale(frame[column].drop_nulls().to_list()), title=title)


FEW_BARS = 40  # up to this many bars carry their value as a label
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


def _labelled(bars: alt.Chart, rows: int, value: str, fmt: str) -> Drawn:
    """`bars` with each bar's value printed at its end when there are few enough to read."""
    if rows > FEW_BARS:
        return _drawn(bars)
    text = bars.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text(f"{value}:Q", format=fmt),
                                                                   color=alt.value("#333"))
    return _drawn(bars + text)


def speedup_bars(frame: pl.DataFrame) -> Drawn:
    """Speedup (x) per model, computed and stored side by side, with a rule at 1x."""
    data, drawn = _most_bars(frame.filter(pl.col("speedup (x)").is_not_null()).with_columns(
        pl.concat_str([pl.col("model"), pl.col("candidate devices").cast(pl.String).fill_null("?") + pl.lit(" devices")],
                      separator=" · ").alias("row")).select(
        "row", "model", "baseline", "candidate", "speedup (x)", "kind", "caveats", "source"), None)
    title = _titled("Speedup of the candidate over the baseline", "dotted rule: 1x (no speedup)", drawn)
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", title="model · candidate devices", sort=None, axis=_ROW_AXIS),
        x=alt.X("speedup (x):Q", title="speedup (x, candidate / baseline)"),
        color=alt.Color("kind:N", title="figure", legend=alt.Legend(orient="top", labelLimit=400)),
        yOffset="kind:N",
        tooltip=["model", "baseline", "candidate", alt.Tooltip("speedup (x):Q", format=".2f"), "kind", "caveats",
                 "source"],
    )
    one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 3], color="#888").encode(
        x=alt.X("x:Q", title="speedup (x, candidate / baseline)"))
    return _drawn((_labelled(bars, data.height, "speedup (x)", ".2f") + one).properties(title=title, height=alt.Step(16)))


def head_to_head_bars(frame: pl.DataFrame) -> Drawn:
    """The second accelerator's figure over the first's, one bar per pair of rows (the Head to head table), coloured
    by whether the pair is like for like, with a rule at 1x."""
    data, drawn = _most_bars(frame.filter(pl.col("ratio (second / first)").is_not_null()).with_columns(
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
            legend=alt.Legend(orient="top", labelLimit=400)),
        tooltip=["pair", "model", "metric", alt.Tooltip("ratio (second / first):Q", format=".2f"), "like for like",
                 "caveats", "source"],
    )
    one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 3], color="#888").encode(
        x=alt.X("x:Q", title="ratio (x, second / first of the pair)"))
    title = _titled("Second over first, per pair of stored results", "dotted rule: 1x (the same)", drawn)
    return _drawn((_labelled(bars, data.height, "ratio (second / first)", ".2f") + one).properties(
        title=title, height=alt.Step(18)))


def accelerator_bars(frame: pl.DataFrame, title: str, *, fmt: str = ",.1~f") -> Drawn:
    """One bar per stored figure, coloured by accelerator; `title` is the normalised unit (the x axis), `fmt` the
    d3 format of its derived figure (a stated precision that never rounds whole digits away: ",.4~r" showed
    16,913 tokens/s as 16,910). The stored value in the tooltip reads as stored."""
    data, drawn = _most_bars(frame.filter(pl.col("normalized").is_not_null()).with_columns(
        pl.concat_str([pl.col("accelerator"), pl.col("model"), pl.col("devices").cast(pl.String).fill_null("?") + pl.lit(" dev"),
                       pl.col("precision").fill_null("?"), pl.col("source").fill_null("?"),
                       pl.lit("#") + pl.col("result id").cast(pl.String)], separator=" · ").alias("row")
    ).select("row", "accelerator", "accelerator name", "model", "devices", "precision", "framework", "value",
             "normalized", "source", "result id"), "normalized", spread="accelerator")
    percent = fmt.endswith("%")  # a fraction (MFU) reads as a percentage on the axis as on the bars and table
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · devices · precision · source · result id",
                axis=_ROW_TITLE_ABOVE),
        x=alt.X("normalized:Q", title=title.replace("(fraction)", "(%)") if percent else title,
                axis=alt.Axis(format="%") if percent else alt.Axis()),
        color=_colour(data, "accelerator"),
        tooltip=["accelerator name", "model", "devices", "precision", "framework", alt.Tooltip("value:Q", format=","),
                 alt.Tooltip("normalized:Q", format=fmt), "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "normalized", fmt).properties(
        title=_titled(f"{title} per stored figure, by accelerator", drawn), height=alt.Step(20)))


# A long series name is drawn on two lines, broken at the first " · " after 60 characters, not cut short.
_WRAPPED = "split(replace(datum.label, /^(.{60,}?) · /, '$1\\n'), '\\n')"


def scaling_lines(points: pl.DataFrame) -> Drawn:
    """Throughput vs devices per series (colour: the series, in a shade of its accelerator's colour; named in the legend), with each
    series' ideal-linear line dashed; `points` from perfledger.views.scaling.points_by_devices: where a series
    holds several results at a device count, the point is their median and a rule spans their range."""
    thr = "throughput (tokens/s, all devices)"
    data = points.select("series", "accelerator", "devices", thr, "lowest (tokens/s)", "highest (tokens/s)",
                         "ideal linear (tokens/s)", "scaling efficiency", "results", "source", "result id")
    base = alt.Chart(data).encode(x=alt.X("devices:Q", scale=alt.Scale(type="log", base=2), title="devices (count, log scale)"),
             detail="series:N")
    y_title = "throughput (tokens/s, all devices, log scale)"
    y = alt.Y(f"{thr}:Q", scale=alt.Scale(type="log"), title=y_title)
    domain, colours = series_colours(data)
    by_series = alt.Color("series:N", title="series", scale=alt.Scale(domain=domain, range=colours),
                          legend=alt.Legend(orient="top", direction="vertical", labelLimit=1200, labelExpr=_WRAPPED))
    measured = base.mark_line(point=True).encode(
        y=y, color=by_series, shape=alt.Shape("series:N", legend=None),
        tooltip=["series", "devices", alt.Tooltip(f"{thr}:Q", format=",.0f", title="throughput (median, tokens/s)"),
                 alt.Tooltip("lowest (tokens/s):Q", format=",.0f"), alt.Tooltip("highest (tokens/s):Q", format=",.0f"),
                 alt.Tooltip("scaling efficiency:Q", format=".1%", title="scaling efficiency (median)"), "results",
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


def efficiency_bars(frame: pl.DataFrame) -> Drawn:
    data, drawn = _most_bars(frame.filter(pl.col("scaling efficiency").is_not_null(), pl.col("kind").str.starts_with("stored")).with_columns(
        pl.concat_str([pl.col("accelerator"), pl.col("model"), pl.col("devices").cast(pl.String).fill_null("?")], separator=" · ").alias("row")
    ).select("row", "accelerator", "model", "devices", "scaling efficiency", "baseline", "source", "result id"),
        "scaling efficiency", spread="accelerator")
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · devices", axis=_ROW_AXIS),
        x=alt.X("scaling efficiency:Q", axis=alt.Axis(format="%"), title="scaling efficiency (%, stored)"),
        color=_colour(data, "accelerator"),
        tooltip=["accelerator", "model", "devices", alt.Tooltip("scaling efficiency:Q", format=".1%"), "baseline",
                 "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "scaling efficiency", ".0%").properties(
        title=_titled("Scaling efficiency as published", drawn), height=alt.Step(18)))


def ratio_bars(frame: pl.DataFrame) -> Drawn:
    data, drawn = _most_bars(frame.with_columns(
        pl.concat_str([pl.col("accelerator").fill_null("?"), pl.col("model").fill_null("?"), pl.col("result id").cast(pl.String)], separator=" · ").alias("row")
    ).select("row", "accelerator", "model", "devices", "value", "baseline", "source", "result id"), "value")
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("row:N", sort="-x", title="accelerator · model · result", axis=_ROW_AXIS),
        x=alt.X("value:Q", title="stored ratio (x, against the source's baseline)"),
        color=_colour(data, "accelerator"),
        tooltip=["model", "accelerator", "devices", "value", "baseline", "source", "result id"],
    )
    return _drawn(_labelled(bars, data.height, "value", ".2f").properties(
        title=_titled("Sensitivity ratios as published", drawn), height=alt.Step(18)))


def time_vs_devices(frame: pl.DataFrame) -> Drawn:
    base = alt.Chart(frame).encode(x=alt.X("devices:Q", scale=alt.Scale(type="log", base=2), title="devices (count, log scale)"))
    line = base.mark_line(point=True).encode(
        y=alt.Y("time (days):Q", scale=alt.Scale(type="log"), title="time to train (days, log scale)"),
        tooltip=["devices", alt.Tooltip("time (days):Q", format=",.2f"), alt.Tooltip("time (h):Q", format=",.1f"),
                 alt.Tooltip("cost (USD):Q", format="$,.0f"), "basis"],
    )
    chosen = base.transform_filter("datum.chosen").mark_point(size=140, filled=True, color="#d62728").encode(
        y=alt.Y("time (days):Q", title="time to train (days, log scale)"))
    return _drawn((line + chosen).properties(
        title=alt.TitleParams("Time to train vs devices", subtitle="red: the chosen device count"), height=320))


# A per-step chart draws at most this many rows whatever its number of series (phases, the log's own figure, runs
# overlaid): Altair refuses a dataset of over 5,000 rows, and a run page drawing two series of 4,000 rows each
# crashed from about 2,600 steps. Every step of the 1 GB bench log (2.44 M) had made a 250 MB chart message too.
MOST_POINTS = 4_000
STEP_BUCKETS = MOST_POINTS // 2  # envelope's slices for one series: two rows (lowest, highest) a slice


def envelope(frame: pl.DataFrame, value: str, *, by: tuple[str, ...] = (),
             buckets: int = STEP_BUCKETS) -> pl.DataFrame:
    """The rows drawn for `value` against step: all of them when they fit, else, in each of `buckets` equal slices
    of the step range (and each `by` group), the rows with the lowest and the highest value, so that spikes and
    dips stay visible. Rows without a value are dropped (they draw nothing); the frame's order is kept."""
    data = frame.filter(pl.col(value).is_not_null())
    if data.height <= 2 * buckets:
        return data
    first, last = data["step"].min(), data["step"].max()
    slice_of = ((pl.col("step") - first) * buckets // (last - first + 1)).alias("_slice")  # type: ignore[operator]
    indexed = data.with_row_index("_row")
    picked = indexed.with_columns(slice_of).group_by("_slice", *by).agg(
        low=pl.col("_row").get(pl.col(value).arg_min()), high=pl.col("_row").get(pl.col(value).arg_max()))
    keep = pl.concat([picked["low"], picked["high"]]).unique()
    return indexed.filter(pl.col("_row").is_in(keep.implode())).drop("_row")


def bounded(frame: pl.DataFrame, value: str, *, by: tuple[str, ...] = (), points: int = MOST_POINTS) -> pl.DataFrame:
    """At most `points` rows of `frame` to draw `value` against step, however many `by` groups it holds: every row
    when they fit, else the envelope with each group's equal share of the slices (one slice at least a group)."""
    data = frame.filter(pl.col(value).is_not_null())
    if data.height <= points:
        return data
    groups = data.select(by).n_unique() if by else 1
    return envelope(data, value, by=by, buckets=max(1, points // (2 * groups)))


def _drawn_title(text: str, drawn: pl.DataFrame, frame: pl.DataFrame, value: str) -> alt.TitleParams:
    total = frame[value].count()
    if drawn.height == total:
        return alt.TitleParams(text)
    return alt.TitleParams(text, subtitle=f"{drawn.height:,} of {total:,} steps drawn: the lowest and highest of "
                                          "each slice of the run (the CSV holds every step)")


_STEP_AXIS = alt.Axis(format="d", tickMinStep=1)  # steps are whole: a 3-step run read 0.0, 0.2 ... 3.0


def step_times(frame: pl.DataFrame) -> Drawn:
    """Step time per step, coloured by phase (warm-up and stalls stand out from the steady window)."""
    colours = alt.Scale(domain=["warmup", "steady", "stall", "untimed"], range=["#bdbdbd", "#1f77b4", "#d62728", "#ffbf00"])
    drawn = bounded(frame, "step_time_s", by=("phase",))
    title = _drawn_title("step time", drawn, frame, "step_time_s")
    return _drawn(alt.Chart(drawn, title=title).mark_circle(size=18).encode(
        x=alt.X("step:Q", title="step", axis=_STEP_AXIS), y=alt.Y("step_time_s:Q", title="step time (s)"),
        color=alt.Color("phase:N", scale=colours), tooltip=["step", "step_time_s", "phase"],
    ).properties(height=280))


def loss_curve(frame: pl.DataFrame) -> Drawn:
    drawn = bounded(frame, "loss")
    return _drawn(alt.Chart(drawn, title=_drawn_title("loss", drawn, frame, "loss")).mark_line().encode(
        x=alt.X("step:Q", title="step", axis=_STEP_AXIS), y=alt.Y("loss:Q", scale=alt.Scale(zero=False)),
        tooltip=["step", "loss"]
    ).properties(height=220))


def count_bars(frame: pl.DataFrame, column: str) -> Drawn:
    """Result rows per group, on a log axis (one group holds most rows; a linear axis hid the others)."""
    data = frame.head(25)
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y(f"{column}:N", sort="-x", title=column, axis=_ROW_AXIS),
        x=alt.X("result rows:Q", scale=alt.Scale(type="log"), stack=None, title="result rows (count, log scale)"),
        tooltip=[column, "result rows", "sources", "runs"])
    return _drawn(_labelled(bars, data.height, "result rows", ",d").properties(title=f"Stored result rows by {column}",
                                                                               height=alt.Step(24)))


# ------------------------------------------------------------------------------- one run, and runs overlaid

StepWindow = tuple[int, int] | None  # the steady window (first and last step), shaded on per-step charts
_PRINTED = "as the log printed"
_RECOMPUTED = "recomputed"


def _window_band(window: StepWindow) -> alt.Chart:
    first, last = window if window is not None else (0, 0)
    band = pl.DataFrame({"first": [first], "last": [last], "window": ["steady window"]}).head(1 if window else 0)
    shaded: alt.Chart = alt.Chart(band).mark_rect(opacity=0.12, color="#1f77b4").encode(
        x=alt.X("first:Q", title="step"), x2="last:Q", tooltip=[alt.Tooltip("first:Q", title="steady from step"),
                                           alt.Tooltip("last:Q", title="to step")])
    return shaded


def step_figure(frame: pl.DataFrame, value: str, title: str, y_title: str, *, printed: str | None = None,
                window: StepWindow = None, fmt: str = ",.4g") -> Drawn:
    """One per-step figure against step: our recomputation, and (where stored) the figure as the log printed
    it, the steady window shaded."""
    series = [(value, _RECOMPUTED)] + ([(printed, _PRINTED)] if printed and printed in frame.columns
                                       and frame[printed].fill_nan(None).count() else [])
    names = [name for _, name in series]
    long = pl.concat([bounded(frame.select("step", pl.col(c).fill_nan(None).alias("value")), "value",
                              points=MOST_POINTS // len(series)).with_columns(pl.lit(name).alias("figure"))
                      for c, name in series])
    drawn_title = _drawn_title(title, long.filter(pl.col("figure") == _RECOMPUTED), frame, value) \
        if frame[value].count() else alt.TitleParams(title)
    lines = alt.Chart(long).mark_line(point=alt.OverlayMarkDef(size=12)).encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False), axis=alt.Axis(format=fmt)),
        color=alt.Color("figure:N", title=None, scale=alt.Scale(domain=names, range=["#1f77b4", "#ff7f0e"][:len(names)]),
                        legend=alt.Legend(orient="right")),
        strokeDash=alt.StrokeDash("figure:N", legend=None,
                                  scale=alt.Scale(domain=names, range=[[1, 0], [4, 3]][:len(names)])),
        tooltip=["step", "figure", alt.Tooltip("value:Q", format=fmt, title=y_title)],
    )
    return _drawn((_window_band(window) + lines).properties(title=drawn_title, height=220))


OVERLAY_X = {"step": ("step", "step", ",d"), "tokens": ("tokens_seen", "tokens seen", "~s"),
             "time": ("elapsed_s", "wall clock (s since the first step)", ",.0f")}


def overlay(frame: pl.DataFrame, value: str, x: str, title: str, y_title: str, *, fmt: str = ",.4g") -> Drawn:
    """One figure for several runs on the same axes, one colour per run, against step, tokens seen or wall clock,
    with a cross-hair: the pointer picks the nearest drawn point, a rule marks its x and each run's point there
    reads out its value."""
    x_col, x_title, x_fmt = OVERLAY_X.get(x, OVERLAY_X["step"])
    columns = list(dict.fromkeys(["run", "step", value, x_col]))
    data = frame.select(columns).with_columns(pl.col(value).fill_nan(None))
    runs = data["run"].unique(maintain_order=True).to_list()
    share = MOST_POINTS // max(1, len(runs))  # each run its own slices of its own steps: runs differ in length
    drawn = pl.concat([bounded(data.filter(pl.col("run") == r), value, points=share) for r in runs]) if runs else data
    subtitle = f"{len(runs)} runs by {x_title}" + ("" if drawn.height == data[value].count() else
                                                   f"; {drawn.height:,} of {data[value].count():,} steps drawn: "
                                                   "the lowest and highest of each slice of each run")
    x_enc = alt.X(f"{x_col}:Q", title=x_title, axis=alt.Axis(format=x_fmt))
    y_enc = alt.Y(f"{value}:Q", title=y_title, scale=alt.Scale(zero=False), axis=alt.Axis(format=fmt))
    colour = alt.Color("run:N", title="run", legend=alt.Legend(orient="right", labelLimit=160))
    nearest = alt.selection_point(name="crosshair", nearest=True, on="pointerover", fields=[x_col], empty=False,
                                  clear="pointerout")
    base = alt.Chart(drawn).encode(x=x_enc)
    lines = base.mark_line(point=alt.OverlayMarkDef(size=10)).encode(
        y=y_enc, color=colour, tooltip=["run", "step", alt.Tooltip(f"{value}:Q", format=fmt, title=y_title)])
    pick = base.mark_point(opacity=0, size=60).encode(y=y_enc).add_params(nearest)
    rule = base.mark_rule(color="#888").encode(opacity=alt.condition(nearest, alt.value(0.8), alt.value(0)))
    readout = base.mark_text(align="left", dx=6, dy=-8, fontSize=11).encode(
        y=y_enc, color=colour, opacity=alt.condition(nearest, alt.value(1), alt.value(0)),
        text=alt.Text(f"{value}:Q", format=fmt))
    return _drawn(alt.LayerChart(layer=[lines, pick, rule, readout]).properties(
        title=alt.TitleParams(title, subtitle=subtitle), height=240))
