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
    return frame.with_columns(steady.label_steps(frame, state.rule()).alias("phase"))


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
