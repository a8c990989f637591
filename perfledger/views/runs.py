"""Runs: ingested logs; one run explored (its configuration, per-step figures, steady window, the figures stored
for a run without steps); several runs overlaid on the same axes with their configs compared."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import names, store
from perfledger import urlstate as u
from perfledger.calc import metrics, steady
from perfledger.calc import steps as steps_calc
from perfledger.errors import InvalidInput, InvalidQuery
from perfledger.records import RunRow
from perfledger.views import long_runs
from perfledger.views._shared import TFLOPS_METRIC, TOKEN_METRIC
from perfledger.views.columns import reading_order
from perfledger.views.run_figures import (  # noqa: F401  (the run page's figures, also read as runs.NAME)
    CLAIM_COLUMNS,
    CLAIM_METRICS,
    CLAIMS_SCHEMA,
    FIGURE_LABELS,
    FIGURE_ORDER,
    PRINTED_FIGURES,
    PRINTED_SCHEMA,
    nearest_claims,
    printed_vs_recomputed,
    run_figures,
)
from perfledger.vocabulary import Metric

X_AXES = ("step", "tokens", "time")  # overlays by step, tokens seen or wall clock
MFU, TTT_METRIC = Metric.MFU.value, Metric.TIME_TO_TRAIN_S.value


@dataclass(frozen=True)
class RunsView:
    run: int = u.key("run", 0, low=0, high=u.MAX_ID)
    vs: tuple[str, ...] = u.key("vs", (), label="runs overlaid")
    x: str = u.key("x", "step", choices=X_AXES)
    first: int = u.key("w0", -1, low=-1)
    last: int = u.key("w1", -1, low=-1)
    warmup_fraction: float = u.key("wf", 0.1, low=0.0, high=0.5)
    launch: int = u.key("launch", 0, low=0)  # 0: the launch the run is summarised over (its longest)
    usd: float = u.key("usd", 0.0, low=0.0, high=1e6, label="price of a device-hour (USD)")  # goodput per dollar
    log: bool = u.key("log", False, label="log scale")  # the per-step charts' y axes
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def compared(self) -> tuple[int, ...]:
        """The runs overlaid on this one (vs=2,5): whole numbers other than the run itself, each once."""
        ids = (int(v) for v in self.vs if v.strip().isdigit())
        return tuple(dict.fromkeys(i for i in ids if i and i != self.run))

    def describe(self) -> str:
        others = self.compared()
        if self.run and others:
            return f"Run {self.run} overlaid with run{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}"
        return f"Run {self.run}: configuration, steps and steady state" if self.run else "Ingested runs"

    def rule(self) -> steady.SteadyRule:
        return steady.SteadyRule(
            warmup_fraction=self.warmup_fraction,
            first_step=self.first if self.first >= 0 else None,
            last_step=self.last if self.last >= 0 else None,
        )


def table(state: RunsView, engine: Engine) -> pl.DataFrame:
    """The run list, or (with run=ID) the run's steps labelled warm-up / steady / stall with per-step figures."""
    if not state.run:
        times = store.results(engine, metric=TTT_METRIC, columns=("run_id", "value")).drop_nulls("run_id")
        return runs_list(store.runs(engine), times)
    return run_steps(state, engine, state.run)


IMPORT_FORMATS = ("claims_csv",)  # a row created by one of these is an import of published figures, not a run


# The run list as a 1440px screen reads it: the run, what it trained on what, and its figures; details to the right.
RUNS_FIRST = ("id", "file_name", "model", "accelerator", "n_devices", TOKEN_METRIC, MFU, TFLOPS_METRIC, TTT_METRIC,
              "format")


def runs_list(frame: pl.DataFrame, times: pl.DataFrame) -> pl.DataFrame:
    """The run list without claim imports (those are listed as imports of their source on the Sources page), with
    each run's stored time to train (`times`: run_id, value): an MLPerf result has no steps, and that is its figure."""
    timed = times.group_by("run_id").agg(pl.col("value").first().alias(TTT_METRIC)).rename({"run_id": "id"})
    listed = frame.filter(~pl.col("format").is_in(list(IMPORT_FORMATS))).join(timed, on="id", how="left",
                                                                                maintain_order="left")
    return reading_order(listed, RUNS_FIRST)


def imported(row: RunRow) -> bool:
    """Whether a stored run row is an import of published figures (listed on Sources, not as a run)."""
    return row.format in IMPORT_FORMATS


def unlisted_note(engine: Engine, run_id: int) -> str:
    """What a run id missing from the run list is: an import of published figures, or no run at all."""
    row = store.run(engine, run_id)
    if row is None:
        return f"There is no run {run_id}: it was never ingested, or it was deleted. The runs stored are listed below."
    source = f" of source {row.source_id}" if row.source_id else ""
    return (f"Item {row.id} ({row.file_name}) is an import of published figures{source}, not a run: the Sources "
            "page lists it with its figures." if imported(row) else f"Run {row.id} is not in the run list.")


def stored_run(engine: Engine, run_id: int) -> RunRow:
    row = store.run(engine, run_id)
    if row is None:
        raise InvalidQuery(f"there is no run {run_id}: it was never ingested, or it was deleted")
    return row


def run_steps(state: RunsView, engine: Engine, run_id: int) -> pl.DataFrame:
    """The run's steps labelled with their phase and per-step figures; of a run too long to hold (see long_runs),
    the rows its charts draw."""
    row = stored_run(engine, run_id)
    launch = state.launch or summarised_launch(row)
    if long_runs.is_long(row):
        return long_runs.long_run(row, state.rule(), launch, drawn_columns(), engine).drawn
    frame = store.steps(engine, run_id)
    if launch is not None and frame["launch"].n_unique() > 1:
        frame = frame.filter(pl.col("launch").fill_null(1) == launch)
    labelled = frame.with_columns(steady.label_steps(frame, state.rule()).alias("phase"))
    return with_step_figures(labelled, row)


def summarised_launch(row: RunRow) -> int | None:
    """The launch a run of several is summarised over (None for a run of one launch)."""
    for span in (row.summary or {}).get("launches") or []:
        if span.get("summarised"):
            return int(span["launch"])
    return None


LAUNCH_SCHEMA = {"launch": pl.Int64(), "first_step": pl.Int64(), "last_step": pl.Int64(), "steps": pl.Int64(),
                 "wall_time_s": pl.Float64(), "summarised": pl.Boolean()}


def launches(engine: Engine, run_id: int) -> pl.DataFrame:
    """Every launch of a run's file (empty for a file of one launch), as stored with its summary."""
    r = store.run(engine, run_id)
    rows = ((r.summary or {}).get("launches") or []) if r else []
    return pl.DataFrame([{k: row.get(k) for k in LAUNCH_SCHEMA} for row in rows], schema=LAUNCH_SCHEMA)


def rlhf_parts(row: RunRow) -> str | None:
    """An RLHF run's step parts over its stored steady window (perfledger.calc.phases) in one sentence; None for a
    run whose log prints none."""
    s = row.summary or {}
    share, training = s.get("generation_share"), s.get("training_share")
    if share is None:
        return None
    parts = [f"generation {share:.0%} of the step time (median {s.get('generation_s_median') or 0:.2f} s)"]
    if training is not None:
        parts.append(f"training {training:.0%} (median {s.get('training_s_median') or 0:.2f} s)")
    if s.get("samples_per_s"):
        parts.append(f"{s['samples_per_s']:,.2f} samples/s")
    return (f"RLHF step, steps {s.get('first_step')}-{s.get('last_step')}: " + ", ".join(parts)
            + "; the rest is scoring and gathering")


def not_steady(summary: steady.SteadyState) -> list[str]:
    """Why the page's window is not a steady state (empty when it is)."""
    return steady.not_steady(summary)


# Per-step figures, recomputed as the run's summary computed its steady-state ones (columns of run_steps).
STEP_FIGURES = steps_calc.STEP_FIGURES


def with_step_figures(steps: pl.DataFrame, row: RunRow) -> pl.DataFrame:
    """`steps` with the per-step figures of perfledger.calc.steps, from the run's devices, its summary's FLOPs
    per token and the peak its MFU used."""
    summary = row.summary or {}
    return steps_calc.step_figures(steps, row.config.get("n_devices"), summary.get("flops_per_token"),
                                   steps_calc.peak_of(summary.get("model_tflops_per_device"), summary.get("mfu")))


def run_summary(state: RunsView, steps: pl.DataFrame) -> steady.SteadyState | None:
    """The steady state of a run's steps (the frame the page already holds: no second read); None when the run
    has no timed steps (an MLPerf result, a micro-benchmark, a summary file)."""
    try:
        return steady.steady_state(steps, state.rule())
    except InvalidInput:
        return None


def page_summary(state: RunsView, engine: Engine, steps: pl.DataFrame) -> steady.SteadyState | None:
    """run_summary() of the page's run; of a run too long to hold, computed from every step in streaming passes
    (the page holds only the drawn rows)."""
    row = stored_run(engine, state.run)
    if not long_runs.is_long(row):
        return run_summary(state, steps)
    launch = state.launch or summarised_launch(row)
    return long_runs.long_run(row, state.rule(), launch, drawn_columns(), engine).summary


def long_run_note(row: RunRow) -> str | None:
    """What the page holds of a run too long to hold (None for any other run)."""
    if not long_runs.is_long(row):
        return None
    return (f"{row.n_steps:,} steps: the figures count every step; the charts, and the table and CSV below, hold "
            "the rows drawn (each figure's lowest and highest in each slice of the run and phase)")


def drawn_columns() -> tuple[str, ...]:
    """Every column a run page's charts draw: step time, each chart's figure and the log's own."""
    return ("step_time_s", *(c for ch in STEP_CHARTS for c in (ch.column, ch.printed) if c))


def steady_window(summary: steady.SteadyState | None) -> tuple[int, int] | None:
    """The steady window's first and last step, shaded on the per-step charts; None without one."""
    if summary is None or summary.first_step is None or summary.last_step is None:
        return None
    return summary.first_step, summary.last_step


# The header of a run: (label, config keys joined) in reading order.
HEADER = (("model", ("model",)), ("accelerator", ("accelerator",)), ("devices", ("n_devices",)),
          ("parallelism", ("tp", "pp", "dp", "cp", "ep")), ("batch (global/micro)", ("global_batch", "micro_batch")),
          ("precision", ("precision",)), ("seq len", ("seq_len",)), ("framework", ("framework", "framework_version")),
          ("workload", ("workload",)))


def run_header(row: RunRow) -> list[tuple[str, str]]:
    """The run's configuration as (label, text) pairs; "—" where the log states nothing (and nobody supplied it)."""
    return [(label, _joined(row.config, keys)) for label, keys in HEADER]


def header_table(row: RunRow, escape: Callable[[str], str] = str) -> str:
    """The run header as a one-row Markdown table (labels over values, each value passed through `escape`: the
    values come from a log)."""
    pairs = run_header(row)
    return "\n".join(["| " + " | ".join(k for k, _ in pairs) + " |", "|" + "---|" * len(pairs),
                      "| " + " | ".join(escape(v.replace("|", "/")) for _, v in pairs) + " |"])


def _joined(config: dict[str, Any], keys: tuple[str, ...]) -> str:
    if keys[0] == "tp":
        parts = [f"{k.upper()} {config[k]}" for k in keys if config.get(k) is not None]
        return " · ".join(parts) or "—"
    if keys[0] in ("model", "accelerator") and config.get(keys[0]) is None:
        printed = config.get(f"{keys[0]}_as_printed")
        return f"{printed} (not in the catalog)" if printed else "—"
    values = [config.get(k) for k in keys]
    if all(v is None for v in values):
        return "—"
    text = [f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else ("—" if v is None else str(v)) for v in values]
    return "\u00a0/\u00a0".join(text) if keys[0] == "global_batch" else " ".join(t for t in text if t != "—")


def overlay_steps(state: RunsView, engine: Engine, main: pl.DataFrame) -> pl.DataFrame:
    """The run's steps and those of each compared run stacked, each labelled "#ID file", for charts by step or
    by tokens seen (each run's own steady rule is the default one unless it is the run shown)."""
    frames = [main.with_columns(pl.lit(run_label(stored_run(engine, state.run))).alias("run"))]
    for other in state.compared():
        steps = run_steps(RunsView(run=other), engine, other)
        frames.append(steps.with_columns(pl.lit(run_label(stored_run(engine, other))).alias("run")))
    return pl.concat(frames, how="diagonal_relaxed")


def run_label(row: RunRow) -> str:
    """A run as the overlaid charts name it: "#4 file.log"."""
    return f"#{row.id} {row.file_name}"




@dataclass(frozen=True)
class StepChart:
    """One per-step chart of the run explorer: the column drawn, its title and axis, the log's own column."""

    column: str
    title: str
    axis: str
    printed: str | None = None
    steady: bool = True  # a figure with a steady level (its axis spans the steady window); not a loss


STEP_CHARTS = (
    StepChart(TOKEN_METRIC, "Tokens/s per device", names.metric_title(TOKEN_METRIC), "reported_tokens_per_s_per_device"),
    StepChart(TFLOPS_METRIC, "Model TFLOP/s per device", names.metric_title(TFLOPS_METRIC), "reported_tflops_per_device"),
    StepChart(MFU, "MFU (of the dense peak)", names.metric_title(MFU), "reported_mfu"),
    StepChart("loss", "Loss", "loss", None, steady=False),
    StepChart(Metric.STEP_TIME_S.value, "Step time", names.metric_title(Metric.STEP_TIME_S.value), None),
)


def drawable(steps: pl.DataFrame, chart: StepChart) -> bool:
    """Whether the chart has anything to draw: our figure or the log's own one."""
    columns = [c for c in (chart.column, chart.printed) if c and c in steps.columns]
    return any(steps[c].fill_nan(None).count() for c in columns)


FORMULAS: tuple[Callable[..., Any], ...] = (steady.steady_state, steps_calc.step_figures, metrics.model_tflops,
                                            metrics.mfu)
