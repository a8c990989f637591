"""History: one configuration's steady-state figure run after run, by the date each run ran (its log's own date)
or by framework version, with change points (perfledger.calc.changepoints), each run judged against the runs
before it, and an optional line at a share of the vendor's published figure for that configuration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import names
from perfledger import urlstate as u
from perfledger.calc import changepoints
from perfledger.store.history import CONFIG_COLUMNS, published_figures, run_figures

# The figures a history follows, each with its direction.
HIGHER_IS_BETTER = {"tokens_per_s_per_device": True, "step_time_s": False, "mfu": True,
                    "model_tflops_per_device": True, "time_to_train_s": False}
METRICS = tuple(HIGHER_IS_BETTER)
METRIC_LABELS = {m: names.metric_title(m) for m in METRICS}  # each with the unit it reads in: "MFU (%)"
AXES = ("date", "version")
FROM_LOG, FROM_INGEST = "log", "ingest (the log printed no date)"
DEFAULT_THRESHOLD_PCT = 2.0
DEFAULT_WINDOW = 5
# A run's own figure before the one its log printed: measured or derived from its steps, then the log's.
_EVIDENCE_ORDER = {"measured": 0, "derived": 1, "reported": 2}
# The columns that name a configuration (like for like: model, accelerator, devices, precision and workload, and the
# layout and framework); "layout" is built from the parallelism columns.
KEY_COLUMNS = ("model", "accelerator", "devices", "precision", "workload", "layout", "framework")
# An MLPerf result is judged on its time to train alone (MLPerf's own figure)
JUDGED_ON = {"mlperf": ("time_to_train_s",)}


@dataclass(frozen=True)
class HistoryView:
    model: str = u.key("m", "")
    accelerator: str = u.key("a", "")
    devices: int = u.key("n", 0, low=0, high=1_000_000, label="devices (0: any)")
    precision: str = u.key("p", "")
    workload: str = u.key("wl", "")
    layout: str = u.key("l", "")
    framework: str = u.key("f", "")
    metric: str = u.key("y", "tokens_per_s_per_device", choices=METRICS)
    by: str = u.key("x", "date", choices=AXES)
    window: int = u.key("w", DEFAULT_WINDOW, low=1, high=50, label="runs before each that it is judged against")
    threshold: float = u.key("t", DEFAULT_THRESHOLD_PCT, low=0.0, high=100.0, label="regression threshold (%)")
    reference: float = u.key("r", 0.0, low=0.0, high=200.0, label="reference line (% of the vendor's figure)")
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        picked = [str(v) for v in (self.model, self.accelerator, self.devices or "", self.precision, self.workload,
                                   self.layout, self.framework) if v]
        scope = " · ".join(picked) if picked else "every configuration"
        label = METRIC_LABELS[self.metric]
        return (f"{label[:1].upper()}{label[1:]} over time for {scope}; a run more than {self.threshold:g}% worse than "
                f"the median of the {self.window} runs before it is flagged")


SCHEMA: dict[str, pl.DataType] = {
    "configuration": pl.String(), "date": pl.Datetime("us", "UTC"), "date from": pl.String(), "run id": pl.Int64(),
    "file": pl.String(), "framework version": pl.String(), "metric": pl.String(), "value": pl.Float64(),
    "unit": pl.String(), "median of runs before": pl.Float64(), "worse than before": pl.Float64(),
    "regression": pl.Boolean(), "level": pl.Float64(), "change point": pl.Boolean(), "reference": pl.Float64(),
    "reference source": pl.String(), "of reference": pl.Float64(), "reference line": pl.Float64(),
    "below reference line": pl.Boolean(), "model": pl.String(), "accelerator": pl.String(), "devices": pl.Int64(),
    "precision": pl.String(), "workload": pl.String(), "layout": pl.String(), "framework": pl.String(),
    "result id": pl.Int64(),
}


def _layout() -> pl.Expr:
    """The parallelism as one text: "tp1 pp1 dp8 cp1" and the strategy, where stated."""
    parts = [pl.lit(name) + pl.col(name).cast(pl.String) for name in ("tp", "pp", "dp", "cp", "ep")]
    return pl.concat_str([*parts, pl.col("strategy")], separator=" ", ignore_nulls=True).fill_null("")


def series_rows(engine: Engine, metrics: tuple[str, ...] = METRICS, run_ids: list[int] | None = None) -> pl.DataFrame:
    """One row per run and metric (the run's own figure before the one its log printed), with its configuration
    named and dated (the log's date, else the ingest date, and which)."""
    rows = _run_identity(run_figures(engine, metrics, run_ids=run_ids))
    rank = pl.col("evidence").replace_strict(_EVIDENCE_ORDER, default=3)
    return (rows.sort([rank, "id"]).unique(["run_id", "metric"], keep="first", maintain_order=True)
            .with_columns(model=pl.col("model_id").fill_null(""), accelerator=pl.col("accelerator_id").fill_null(""),
                          devices=pl.col("n_devices"), precision=pl.col("precision").fill_null(""),
                          workload=pl.col("workload").fill_null(""),
                          layout=_layout(), framework=pl.col("framework").fill_null(""),
                          date=pl.coalesce("ran_at", "ingested_at"),
                          **{"date from": pl.when(pl.col("ran_at").is_null()).then(pl.lit(FROM_INGEST))
                             .otherwise(pl.lit(FROM_LOG))})
            .with_columns(configuration=_configuration()))


def _run_identity(rows: pl.DataFrame) -> pl.DataFrame:
    """Each figure with its run's identity: a column a row leaves empty (an MLPerf result's time to train states no
    accelerator or devices) taken from the run's other rows, so that all of one run's figures are one configuration."""
    return rows.with_columns(pl.col(c).fill_null(pl.col(c).drop_nulls().first().over("run_id"))
                             for c in CONFIG_COLUMNS if c in rows.columns)


def _configuration() -> pl.Expr:
    parts = [pl.col(c).cast(pl.String) for c in KEY_COLUMNS]
    return pl.concat_str([pl.when(p != "").then(p) for p in parts], separator=" · ", ignore_nulls=True)


def _selected(rows: pl.DataFrame, state: HistoryView) -> pl.DataFrame:
    wanted = {"model": state.model, "accelerator": state.accelerator, "precision": state.precision,
              "workload": state.workload, "layout": state.layout, "framework": state.framework}
    rows = rows.filter(pl.col("metric") == state.metric, *[pl.col(c) == v for c, v in wanted.items() if v])
    return rows.filter(pl.col("devices") == state.devices) if state.devices else rows


def configurations(engine: Engine, metric: str = "tokens_per_s_per_device") -> pl.DataFrame:
    """Each configuration with runs for `metric`, most runs first: the choices the page offers."""
    rows = series_rows(engine).filter(pl.col("metric") == metric)
    return (rows.group_by(*KEY_COLUMNS, "configuration").agg(runs=pl.len())
            .sort(["runs", "configuration"], descending=[True, False]))


def _judged(series: pl.DataFrame, state: HistoryView) -> pl.DataFrame:
    """One configuration's runs in date order, each judged against the runs before it, with its step level."""
    values = series["value"].to_list()
    judged = changepoints.worse_than_before(values, window=state.window, threshold=state.threshold / 100,
                                            higher_is_better=HIGHER_IS_BETTER[state.metric])
    fit = changepoints.recent_fit(values)
    levels: list[float | None] = [None] * len(values)
    for segment in fit:
        levels[segment.start:segment.stop] = [segment.level] * (segment.stop - segment.start)
    starts = {segment.start for segment in fit[1:]}
    return series.with_columns(
        pl.Series("median of runs before", [j.baseline for j in judged], pl.Float64),
        pl.Series("worse than before", [j.worse for j in judged], pl.Float64),
        pl.Series("regression", [j.regressed for j in judged], pl.Boolean),
        pl.Series("level", levels, pl.Float64),
        pl.Series("change point", [i in starts for i in range(len(values))], pl.Boolean))


def vendor_references(engine: Engine, metric: str) -> pl.DataFrame:
    """Per model, accelerator, devices, precision and workload: the best figure of the newest source (by its date)
    that published one; a source that lists variants of a configuration (FP8 recipes, say) is held to its best."""
    best_first = HIGHER_IS_BETTER[metric]
    return (published_figures(engine, metric)
            .sort(["source_date", "value", "id"], descending=[True, best_first, True], nulls_last=True)
            .with_columns(pl.col("workload").fill_null(""))
            .unique(["model_id", "accelerator_id", "n_devices", "precision", "workload"], keep="first")
            .select(model="model_id", accelerator="accelerator_id", devices="n_devices", precision="precision",
                    workload="workload", reference="value", **{"reference source": "source_id"}))


def table(state: HistoryView, engine: Engine) -> pl.DataFrame:
    rows = _selected(series_rows(engine, (state.metric,)), state).sort(["configuration", "date", "run_id"])
    if rows.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    judged = pl.concat([_judged(part, state) for part in rows.partition_by("configuration", maintain_order=True)])
    refs = vendor_references(engine, state.metric)
    out = judged.join(refs, on=["model", "accelerator", "devices", "precision", "workload"], how="left",
                      nulls_equal=True)
    line = pl.col("reference") * state.reference / 100 if state.reference else pl.lit(None, pl.Float64)
    worse_than_line = (pl.col("value") > pl.col("reference line")) if not HIGHER_IS_BETTER[state.metric] \
        else (pl.col("value") < pl.col("reference line"))
    out = out.with_columns((pl.col("value") / pl.col("reference")).alias("of reference"), line.alias("reference line"))
    out = out.with_columns(worse_than_line.alias("below reference line"))
    return out.rename({"run_id": "run id", "file_name": "file", "framework_version": "framework version",
                       "id": "result id"}).select(list(SCHEMA)).cast(SCHEMA)  # type: ignore[arg-type]


def filters_label(state: HistoryView) -> str:
    """The folded configuration and rule, said on their fold: "Configuration: any · regression: 2% worse than the
    median of the 5 runs before"."""
    picked = [str(v) for v in (state.model, state.accelerator, state.devices or "", state.precision, state.workload,
                               state.layout, state.framework) if v]
    reference = f" · reference line at {state.reference:g}% of the vendor's figure" if state.reference else ""
    return (f"Configuration: {' · '.join(picked) or 'any'} · regression: {state.threshold:g}% worse than the median "
            f"of the {state.window} runs before{reference}")


def undated(table_frame: pl.DataFrame) -> int:
    """How many of the table's runs printed no date in their log (placed at their ingest date)."""
    return table_frame.filter(pl.col("date from") != FROM_LOG).height


def regressed(table_frame: pl.DataFrame) -> pl.DataFrame:
    """The table's runs flagged as regressions."""
    return table_frame.filter(pl.col("regression"))


def chart_points(table_frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """The chart's points: x the run's date, or its framework version ("not stated" where none)."""
    x = pl.col("date") if by == "date" else pl.col("framework version").fill_null("not stated")
    return table_frame.with_columns(x.alias("x"))


FORMULAS: tuple[Callable[..., Any], ...] = (changepoints.step_fit, changepoints.worse_than_before,
                                            changepoints.worse_by)
