"""Runs: ingested logs, one run's steps labelled warm-up / steady / stall, two runs' configs compared."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import metrics, steady
from perfledger.errors import InvalidQuery
from perfledger.views._shared import TFLOPS_METRIC, TOKEN_METRIC


@dataclass(frozen=True)
class RunsView:
    run: int = u.key("run", 0, low=0)
    vs: int = u.key("vs", 0, low=0)
    first: int = u.key("w0", -1, low=-1)
    last: int = u.key("w1", -1, low=-1)
    warmup_fraction: float = u.key("wf", 0.1, low=0.0, high=0.5)
    launch: int = u.key("launch", 0, low=0)  # 0: the launch the run is summarised over (its longest)
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.run and self.vs:
            return f"Run {self.run} compared with run {self.vs}"
        return f"Run {self.run}: steps and steady state" if self.run else "Ingested runs"

    def rule(self) -> steady.SteadyRule:
        return steady.SteadyRule(
            warmup_fraction=self.warmup_fraction,
            first_step=self.first if self.first >= 0 else None,
            last_step=self.last if self.last >= 0 else None,
        )


def table(state: RunsView, engine: Engine) -> pl.DataFrame:
    """The run list, or (with run=ID) the run's steps labelled warm-up / steady / stall."""
    if not state.run:
        return runs_list(store.runs(engine))
    return run_steps(state, engine, state.run)


IMPORT_FORMATS = ("claims_csv",)  # a row created by one of these is an import of published figures, not a run


def runs_list(frame: pl.DataFrame) -> pl.DataFrame:
    """The run list without claim imports: those are listed as imports of their source on the Sources page."""
    return frame.filter(~pl.col("format").is_in(list(IMPORT_FORMATS)))


def run_steps(state: RunsView, engine: Engine, run_id: int) -> pl.DataFrame:
    if store.run(engine, run_id) is None:
        raise InvalidQuery(f"there is no run {run_id}; the Runs page lists the ingested runs")
    frame = store.steps(engine, run_id)
    launch = state.launch or summarised_launch(engine, run_id)
    if launch is not None and frame["launch"].n_unique() > 1:
        frame = frame.filter(pl.col("launch").fill_null(1) == launch)
    return frame.with_columns(steady.label_steps(frame, state.rule()).alias("phase"))


def summarised_launch(engine: Engine, run_id: int) -> int | None:
    """The launch a run of several is summarised over (None for a run of one launch)."""
    r = store.run(engine, run_id)
    for span in ((r.summary or {}).get("launches") or []) if r else []:
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


PRINTED_FIGURES = (("tokens_per_s_per_device", "tokens/s/device"), ("tflops_per_device", "TFLOP/s/device"),
                   ("mfu", "fraction"))
PRINTED_SCHEMA = {"figure": pl.String(), "unit": pl.String(), "printed": pl.Float64(), "recomputed": pl.Float64(),
                  "relative_difference": pl.Float64(), "convention": pl.String()}


def printed_vs_recomputed(engine: Engine, run_id: int) -> pl.DataFrame:
    """The log's own figures (median over the steady window) beside the recomputed ones, with the relative
    difference (recomputed - printed) / printed and the FLOPs convention that reproduces the printed TFLOP/s."""
    r = store.run(engine, run_id)
    summary = (r.summary or {}) if r else {}
    reported = summary.get("reported") or {}
    ours = {"tokens_per_s_per_device": summary.get("tokens_per_s_per_device"),
            "tflops_per_device": summary.get("model_tflops_per_device"), "mfu": summary.get("mfu")}
    rows = [{"figure": name, "unit": unit, "printed": reported[f"reported_{name}"], "recomputed": ours[name],
             "relative_difference": reported.get(f"diff_{name}"),
             "convention": (reported.get("explanation") if name == "tflops_per_device" else None)}
            for name, unit in PRINTED_FIGURES if reported.get(f"reported_{name}") is not None]
    return pl.DataFrame(rows, schema=PRINTED_SCHEMA)


def not_steady(summary: steady.SteadyState) -> list[str]:
    """Why the page's window is not a steady state (empty when it is)."""
    return steady.not_steady(summary)


def run_summary(state: RunsView, steps: pl.DataFrame) -> steady.SteadyState:
    """The steady state of a run's steps (the frame the page already holds: no second read)."""
    return steady.steady_state(steps, state.rule())


def config_diff(engine: Engine, a: int, b: int) -> pl.DataFrame:
    """Config keys whose values differ between two runs (and the steady-state summary figures)."""
    ra, rb = store.run(engine, a), store.run(engine, b)
    if ra is None or rb is None:
        raise InvalidQuery(f"there is no run {a if ra is None else b}; the Runs page lists the ingested runs")
    left = {**{f"config.{k}": v for k, v in ra.config.items()},
            **{f"summary.{k}": v for k, v in (ra.summary or {}).items()}}
    right = {**{f"config.{k}": v for k, v in rb.config.items()},
             **{f"summary.{k}": v for k, v in (rb.summary or {}).items()}}
    rows = [{"key": k, f"run {a}": _text(left.get(k)), f"run {b}": _text(right.get(k)), "differs": left.get(k) != right.get(k)}
            for k in sorted(set(left) | set(right))]
    schema = {"key": pl.String(), f"run {a}": pl.String(), f"run {b}": pl.String(), "differs": pl.Boolean()}
    return pl.DataFrame(rows, schema=schema)


def _text(v: Any) -> str | None:
    return None if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))


def nearest_claims(engine: Engine, run_id: int) -> pl.DataFrame:
    """Published tokens/s/device and TFLOPS rows for the run's model and accelerator."""
    r = store.run(engine, run_id)
    if r is None:
        return store.results(engine, model_ids=[])
    model, acc = r.config.get("model"), r.config.get("accelerator")
    rows = store.results(engine, metric=[TOKEN_METRIC, TFLOPS_METRIC, "mfu"], model_ids=[str(model)],
                         accelerator_ids=[str(acc)])
    return rows.filter(pl.col("run_id").is_null()).select(
        "id", "source_id", "n_devices", "precision", "framework", "metric", "value", "unit")


FORMULAS: tuple[Callable[..., Any], ...] = (steady.steady_state, metrics.model_tflops)
