"""A run's per-step charts (step time, tokens/s, TFLOP/s, MFU, loss against step): frame -> alt.Chart, no data
access. Each axis spans the steady window's values, never a warm-up outlier: a step outside it is drawn at the axis'
edge as a red triangle and named in the subtitle (step 1's 13 s had set a 0-13 s axis for 0.45 s steps). The shaded
band is the steady window, said only where it is drawn; a share (MFU) reads in %; every figure at the reading rule
of perfledger.numbers; a log axis on request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import polars as pl

from perfledger import names, numbers
from perfledger.charts import Drawn, _drawn

# A per-step chart draws at most this many rows whatever its number of series (phases, the log's own figure, runs
# overlaid): Altair refuses a dataset of over 5,000 rows, and a run page drawing two series of 4,000 rows each
# crashed from about 2,600 steps. Every step of the 1 GB bench log (2.44 M) had made a 250 MB chart message too.
MOST_POINTS = 4_000
STEP_BUCKETS = MOST_POINTS // 2  # envelope's slices for one series: two rows (lowest, highest) a slice
StepWindow = tuple[int, int] | None  # the steady window (first and last step), shaded on per-step charts
OUTLIER_COLOUR = "#d62728"
PRINTED, RECOMPUTED = "as the log printed", "recomputed"
_STEP_AXIS = alt.Axis(format="d", tickMinStep=1)  # steps are whole: a 3-step run read 0.0, 0.2 ... 3.0
_EDGE = 0.1  # the axis spans the steady values and a tenth of their spread (at least 2% of their size) each side


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


# ------------------------------------------------------------------------------------------------- axes


@dataclass(frozen=True, slots=True)
class Axis:
    """A per-step chart's y axis: its span (None: it fits every value) and whether it is logarithmic."""

    domain: tuple[float, float] | None = None
    log: bool = False

    def scale(self) -> alt.Scale:
        kind = {"type": "log"} if self.log else {"zero": False}
        return alt.Scale(domain=list(self.domain), **kind) if self.domain else alt.Scale(nice=True, **kind)


def steady_axis(values: pl.Series, steady: pl.Series, *, log: bool = False) -> Axis:
    """The y axis of values whose steady ones are `steady`: it spans them and a margin, and is bounded only when some
    value falls outside that span (then marked as an outlier); a log axis only over positive values."""
    values = values.fill_nan(None).drop_nulls() if values.dtype.is_float() else values.drop_nulls()
    span = steady.fill_nan(None).drop_nulls() if steady.dtype.is_float() else steady.drop_nulls()
    log = log and values.len() > 0 and bool((values > 0).all())
    if span.len() < 2:
        return Axis(None, log)
    low, high = float(span.min()), float(span.max())  # type: ignore[arg-type]
    margin = max(_EDGE * (high - low), 0.02 * max(abs(low), abs(high)))
    low, high = (low - margin if not log else low / (1 + _EDGE * 2)), high + margin
    lowest, highest = float(values.min()), float(values.max())  # type: ignore[arg-type]
    if lowest >= low and highest <= high:
        return Axis(None, log)
    return Axis((numbers.derived(low) or 0.0, numbers.derived(high) or 0.0), log)


def pinned(frame: pl.DataFrame, value: str, axis: Axis) -> pl.DataFrame:
    """`frame` with `shown`: the value, or the axis' edge for one outside it, and `outside`: whether it is."""
    if axis.domain is None:
        return frame.with_columns(pl.col(value).alias("shown"), pl.lit(False).alias("outside"))
    low, high = axis.domain
    return frame.with_columns(pl.col(value).clip(low, high).alias("shown"),
                              ((pl.col(value) < low) | (pl.col(value) > high)).fill_null(False).alias("outside"))


def outlier_marks(data: pl.DataFrame, x: alt.X, y_title: str, value_title: str, axis: Axis) -> alt.Chart:
    """Red triangles at the axis' edge for the rows outside it, each with its real value in the tooltip."""
    outside = data.filter(pl.col("outside")).with_columns(
        pl.when(pl.col("shown") > pl.col("value")).then(pl.lit("triangle-down")).otherwise(pl.lit("triangle-up"))
        .alias("mark"))
    marks: alt.Chart = alt.Chart(outside).mark_point(filled=True, size=90, color=OUTLIER_COLOUR, opacity=1).encode(
        x=x, y=alt.Y("shown:Q", title=y_title, scale=axis.scale()),
        shape=alt.Shape("mark:N", scale=None, legend=None),
        tooltip=["step", alt.Tooltip("value:Q", format=numbers.TOOLTIP_FORMAT, title=f"{value_title}, off the axis")])
    return marks


def outlier_line(data: pl.DataFrame, unit: str) -> str:
    """The subtitle naming the points off the axis ("" when none is): "▲▼ 2 steps off the axis, at its edge:
    step 1 (13 s), step 2 (1.9 s)"."""
    outside = data.filter(pl.col("outside")).sort("step")
    if outside.height == 0:
        return ""
    shown = ", ".join(f"step {s} ({numbers.text(v, unit, stored=True)})"
                      for s, v in outside.select("step", "value").head(2).iter_rows())
    more = f" and {outside.height - 2:,} more" if outside.height > 2 else ""
    return f"▲▼ {outside.height:,} step{'s' if outside.height > 1 else ''} off the axis, at its edge: {shown}{more}"


def window_band(window: StepWindow) -> alt.Chart:
    """The steady window shaded (nothing when there is none)."""
    first, last = window if window is not None else (0, 0)
    band = pl.DataFrame({"first": [first], "last": [last]}).head(1 if window else 0)
    shaded: alt.Chart = alt.Chart(band).mark_rect(opacity=0.12, color="#1f77b4").encode(
        x=alt.X("first:Q", title="step"), x2="last:Q",
        tooltip=[alt.Tooltip("first:Q", title="steady from step"), alt.Tooltip("last:Q", title="to step")])
    return shaded


def band_line(window: StepWindow, spans: bool = True) -> str:
    """The subtitle saying what the band is, where one is drawn."""
    if not window:
        return ""
    return f"shaded: the steady window, steps {window[0]:,}-{window[1]:,}" + ("; the axis spans it" if spans else "")


def drawn_line(drawn: pl.DataFrame, frame: pl.DataFrame, value: str) -> str:
    total = frame[value].count()
    return "" if drawn.height >= total else (f"{drawn.height:,} of {total:,} steps drawn: the lowest and highest of "
                                             "each slice of the run (the CSV holds every step)")


def titled(text: str, lines: Sequence[str]) -> alt.TitleParams:
    shown = [line for line in lines if line]
    return alt.TitleParams(text, subtitle=shown) if shown else alt.TitleParams(text)


# ------------------------------------------------------------------------------------------------- charts


def step_times(frame: pl.DataFrame, window: StepWindow = None, *, log: bool = False) -> Drawn:
    """Step time per step, coloured by phase (warm-up and stalls stand out from the steady window), the window
    shaded, the axis spanning the steady steps."""
    colours = alt.Scale(domain=["warmup", "steady", "stall", "untimed"], range=["#bdbdbd", "#1f77b4", OUTLIER_COLOUR, "#ffbf00"])
    drawn = bounded(frame, "step_time_s", by=("phase",))
    axis = steady_axis(drawn["step_time_s"], drawn.filter(pl.col("phase") == "steady")["step_time_s"], log=log)
    data = pinned(drawn.select("step", "phase", pl.col("step_time_s").alias("value")), "value", axis)
    x, y_title = alt.X("step:Q", title="step", axis=_STEP_AXIS), names.metric_title("step_time_s")
    points = alt.Chart(data).mark_circle(size=18).encode(
        x=x, y=alt.Y("shown:Q", title=y_title, scale=axis.scale()), color=alt.Color("phase:N", scale=colours),
        tooltip=["step", alt.Tooltip("value:Q", format=numbers.TOOLTIP_FORMAT, title=y_title), "phase"])
    lines = [drawn_line(drawn, frame, "step_time_s"), band_line(window, axis.domain is not None), outlier_line(data, "s")]
    return _drawn(alt.LayerChart(layer=[window_band(window), points, outlier_marks(data, x, y_title, y_title, axis)])
                  .properties(title=titled("step time", lines), height=280))


def loss_curve(frame: pl.DataFrame) -> Drawn:
    drawn = bounded(frame, "loss")
    return _drawn(alt.Chart(drawn, title=titled("loss", [drawn_line(drawn, frame, "loss")])).mark_line().encode(
        x=alt.X("step:Q", title="step", axis=_STEP_AXIS), y=alt.Y("loss:Q", scale=alt.Scale(zero=False)),
        tooltip=["step", alt.Tooltip("loss:Q", format=numbers.TOOLTIP_FORMAT)]).properties(height=220))


def step_figure(frame: pl.DataFrame, value: str, title: str, y_title: str, *, printed: str | None = None,
                window: StepWindow = None, log: bool = False, steady: bool = True) -> Drawn:
    """One per-step figure against step: our recomputation, and (where stored) the figure as the log printed it;
    the steady window shaded and, for a `steady` figure (a throughput; not a loss, which falls all run long),
    setting the axis; a share in %."""
    series = [(value, RECOMPUTED)] + ([(printed, PRINTED)] if printed and printed in frame.columns
                                      and frame[printed].fill_nan(None).count() else [])
    share = names.is_share(value)
    long = pl.concat([bounded(frame.select("step", pl.col(c).fill_nan(None).alias("value")), "value",
                              points=MOST_POINTS // len(series)).with_columns(pl.lit(name).alias("figure"))
                      for c, name in series]).with_columns(_as_read(share))
    recomputed = long.filter(pl.col("figure") == RECOMPUTED)
    in_window = long.filter(pl.col("step").is_between(*window)) if window and steady else long.head(0)
    axis = steady_axis(long["value"], in_window["value"], log=log)
    data = pinned(long, "value", axis)
    x = alt.X("step:Q", title="step")
    names_ = [name for _, name in series]
    lines = alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=12)).encode(
        x=x, y=alt.Y("shown:Q", title=y_title, scale=axis.scale()),
        color=alt.Color("figure:N", title=None, scale=alt.Scale(domain=names_, range=["#1f77b4", "#ff7f0e"][:len(names_)]),
                        legend=alt.Legend(orient="right")),
        strokeDash=alt.StrokeDash("figure:N", legend=None, scale=alt.Scale(domain=names_, range=[[1, 0], [4, 3]][:len(names_)])),
        tooltip=["step", "figure", alt.Tooltip("value:Q", format=numbers.TOOLTIP_FORMAT, title=y_title)])
    subtitle = [drawn_line(recomputed, frame, value) if frame[value].count() else "",
                band_line(window, axis.domain is not None),
                outlier_line(data, names.PERCENT if share else "")]
    return _drawn(alt.LayerChart(layer=[window_band(window), lines, outlier_marks(data, x, y_title, y_title, axis)])
                  .properties(title=titled(title, subtitle), height=220))


def _as_read(share: bool) -> pl.Expr:
    """A per-step figure as it reads: a share in %, our recomputation at the rule's precision, the log's as printed."""
    value = numbers.percent_expr(pl.col("value")) if share else pl.col("value")
    return pl.when(pl.col("figure") == RECOMPUTED).then(numbers.derived_expr(value)).otherwise(value).alias("value")
