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
from perfledger.store.leftovers import spool_folder
from perfledger.store.read import write_step_files
from perfledger.views.remembered import until_written

# Above this many steps a run page reads the run in streaming passes rather than whole (a run of 500,000 steps
# read whole is about 60 MB; the streaming passes cost a few seconds more than a read of a short run).
LONG_RUN_STEPS = 500_000
DRAWN_SLICES = 2_000  # perfledger.charts.STEP_BUCKETS: each chart's slices, a lowest and a highest row each


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
        labelled = steady.label_steps_of_ordered(steps, rule).with_row_index("_row")
        keep = _envelope_rows(steps_calc.step_figures(labelled, *inputs), columns)
        # The running token count is the one figure that is not a row's own: summed over every row (one column),
        # the rest computed on the kept rows alone, so the pass that keeps them streams.
        seen = (steps.select(pl.col("tokens").fill_null(0).cum_sum().cast(pl.Float64).alias("tokens_seen"))
                .with_row_index("_row").filter(pl.col("_row").is_in(keep.implode())))
        kept = labelled.filter(pl.col("_row").is_in(keep.implode())).collect(engine="streaming")
        drawn = steps_calc.step_figures(kept, *inputs).drop("tokens_seen").join(
            seen.collect(engine="streaming"), on="_row", how="left").drop("_row")
        return LongRun(drawn.select(*kept.columns[1:], *steps_calc.STEP_FIGURES), summary)


def _envelope_rows(rows: pl.LazyFrame, columns: Sequence[str]) -> pl.Series:
    """The row numbers of the lowest and highest value of each column in each of DRAWN_SLICES equal slices of the
    run's steps and each phase (charts.envelope's choice, for every column in one streaming pass)."""
    present = [c for c in columns if c in rows.collect_schema()]
    span = rows.select(pl.col("step").min().alias("first"), pl.col("step").max().alias("last")).collect()
    first, last = span["first"][0], span["last"][0]
    if first is None or not present:
        return pl.Series("_row", [], dtype=pl.UInt32)
    slice_of = ((pl.col("step") - first) * DRAWN_SLICES // (last - first + 1)).alias("_slice")
    values = {c: pl.col(c).cast(pl.Float64).fill_nan(None) for c in present}
    picked = rows.with_columns(slice_of).group_by("_slice", "phase").agg(
        *(pl.col("_row").filter(v.is_not_null()).get(v.drop_nulls().arg_min()).alias(f"low {c}")
          for c, v in values.items()),
        *(pl.col("_row").filter(v.is_not_null()).get(v.drop_nulls().arg_max()).alias(f"high {c}")
          for c, v in values.items()),
    ).drop("_slice", "phase").collect(engine="streaming")
    return pl.concat([picked[c] for c in picked.columns]).drop_nulls().unique().alias("_row")
