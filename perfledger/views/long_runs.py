"""A run too long to hold: its steps spooled to Parquet from the store a batch at a time, its steady state computed
from every step in streaming passes, and only the rows its charts draw kept.

Read whole, a run of 10 million steps took 4.1 GB of the server's memory and 12-20 s a render; here the memory
does not grow with the steps, and the answer is remembered until the store is written to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from sqlalchemy import Engine

from perfledger.calc import steady
from perfledger.calc import steps as steps_calc
from perfledger.errors import InvalidInput
from perfledger.records import RunRow
from perfledger.spools import spool_folder
from perfledger.store.read import write_step_files
from perfledger.views.remembered import until_written

# Above this many steps a run page reads the run in streaming passes rather than whole (a run of 500,000 steps
# read whole is about 60 MB; the streaming passes cost a few seconds more than a read of a short run).
LONG_RUN_STEPS = 500_000
DRAWN_SLICES = 2_000  # perfledger.step_charts.STEP_BUCKETS: each chart's slices, a lowest and a highest row each


@dataclass(frozen=True, slots=True)
class LongRun:
    """The rows a long run's charts draw (phase and per-step figures added) and its steady state from every step."""

    drawn: pl.DataFrame
    summary: steady.SteadyState | None


def is_long(row: RunRow) -> bool:
    return row.n_steps > LONG_RUN_STEPS


def long_run(row: RunRow, rule: steady.SteadyRule, launch: int | None, columns: Sequence[str],
             engine: Engine) -> LongRun:
    """The run's drawn rows and steady state for `rule` (only `launch`'s steps when given); `columns` are the
    charts' values, each kept as its lowest and highest row in each of DRAWN_SLICES slices of the steps (the step
    time's per phase, so that stalls and the warm-up show)."""
    return _remembered_long_run(row.id, rule, launch, tuple(columns), _figure_inputs(row), engine)


def _figure_inputs(row: RunRow) -> tuple[int | None, float | None, float | None]:
    summary = row.summary or {}
    return (row.config.get("n_devices"), summary.get("flops_per_token"),
            steps_calc.peak_of(summary.get("model_tflops_per_device"), summary.get("mfu")))


@until_written(keep=4)
def _remembered_long_run(run_id: int, rule: steady.SteadyRule, launch: int | None, columns: tuple[str, ...],
                         inputs: tuple[int | None, float | None, float | None], engine: Engine) -> LongRun:
    with spool_folder("page") as folder:
        files = write_step_files(engine, run_id, Path(folder))
        if not files:
            return LongRun(pl.DataFrame(), None)
        steps = pl.scan_parquet(files)
        if launch is not None:
            steps = steps.filter(pl.col("launch").fill_null(1) == launch)
        try:
            summary: steady.SteadyState | None = steady.steady_state_of_ordered(steps, rule)
        except InvalidInput:
            summary = None
        phase = steady.label_steps_of_ordered(steps, rule)
        span = steps.select(pl.col("step").min().alias("first"), pl.col("step").max().alias("last")).collect()
        slices = _slices(span["first"][0], span["last"][0])
        drawn = _drawn_rows(files, launch, phase, inputs, columns, slices)
        return LongRun(drawn, summary)


CHUNK_ROWS = 200_000


def _slices(first: int | None, last: int | None) -> pl.Expr:
    """Each step's slice of the run's step range, DRAWN_SLICES equal slices."""
    if first is None or last is None:
        return pl.lit(0).alias("_slice")
    return ((pl.col("step") - first) * DRAWN_SLICES // (last - first + 1)).alias("_slice")


def _drawn_rows(files: Sequence[Path], launch: int | None, phase: pl.Expr,
                inputs: tuple[int | None, float | None, float | None], columns: Sequence[str],
                slices: pl.Expr) -> pl.DataFrame:
    """The rows the charts draw, read a file of the spool at a time: each chunk's extremes are kept, then the
    extremes of those (a slice's lowest is the lowest of its chunks' lowest)."""
    kept: list[pl.DataFrame] = []
    offset, seen, elapsed = 0, 0.0, 0.0
    for path in files:
        chunk = pl.read_parquet(path)
        if launch is not None:
            chunk = chunk.filter(pl.col("launch").fill_null(1) == launch)
        if not chunk.height:
            continue
        chunk = steps_calc.step_figures(chunk.with_row_index("_row", offset=offset).with_columns(phase), *inputs)
        chunk = chunk.with_columns(pl.col("tokens_seen") + seen, pl.col("elapsed_s") + elapsed)
        offset, seen, elapsed = offset + chunk.height, float(chunk["tokens_seen"][-1]), float(chunk["elapsed_s"][-1])
        kept.append(_extremes(chunk, columns, slices))
    if not kept:
        return pl.DataFrame()
    return _extremes(pl.concat(kept), columns, slices).drop("_row")


def _extremes(rows: pl.DataFrame, columns: Sequence[str], slices: pl.Expr) -> pl.DataFrame:
    """The rows holding the lowest and the highest value of each column in each slice and phase (step_charts.envelope's
    choice, on the run's own slices), in their order."""
    sliced = rows.with_columns(slices)
    picked = [sliced.filter(pl.col(c).cast(pl.Float64).fill_nan(None).is_not_null()).group_by("_slice", "phase")
              .agg(pl.col("_row").get(pl.col(c).cast(pl.Float64).fill_nan(None).arg_min()).alias("low"),
                   pl.col("_row").get(pl.col(c).cast(pl.Float64).fill_nan(None).arg_max()).alias("high"))
              for c in columns if c in rows.columns]
    keep = pl.concat([pl.concat([p["low"], p["high"]]) for p in picked]) if picked else pl.Series([], dtype=pl.UInt32)
    return rows.filter(pl.col("_row").is_in(keep.implode()))
