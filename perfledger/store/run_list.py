"""The run list: every ingested run with the configuration and steady-state figures it is listed by, taken out of
its JSON by the engine, so the list reads a few values a run instead of handing every run's JSON to Python
(json.loads of 10,000 summaries took 3x the SQL that returns the same rows)."""

from __future__ import annotations

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema
from perfledger.store.read import query

RUN_LIST_FIELDS = {
    "model": ("config", "model"),
    "accelerator": ("config", "accelerator"),
    "n_devices": ("config", "n_devices"),
    "precision": ("config", "precision"),
    "step_time_s_median": ("summary", "step_time_s_median"),
    "tokens_per_s_per_device": ("summary", "tokens_per_s_per_device"),
    "model_tflops_per_device": ("summary", "model_tflops_per_device"),
    "mfu": ("summary", "mfu"),
    "jitter_cv": ("summary", "jitter_cv"),
}
_NUMBERS = {"n_devices": pl.Int64()} | dict.fromkeys(
    ("step_time_s_median", "tokens_per_s_per_device", "model_tflops_per_device", "mfu", "jitter_cv"), pl.Float64()
)


def runs(engine: Engine) -> pl.DataFrame:
    """Every ingested run, newest first, with its configuration and steady-state figures flattened."""
    r = schema.run
    fields = [json_text(engine.dialect.name, blob, key).label(name) for name, (blob, key) in RUN_LIST_FIELDS.items()]
    listed = query(engine, sa.select(r.c.id, r.c.file_name, r.c.format, r.c.ingested_at, r.c.n_steps,
                                     r.c.skipped_lines, *fields).order_by(r.c.id.desc()))
    return listed.with_columns(as_number(pl.col(name), kind) for name, kind in _NUMBERS.items())


def json_text(dialect: str, blob: str, key: str) -> sa.ColumnElement[str]:
    """The value at `key` of a run's JSON column `blob` (config, summary) as text (a string unquoted, a number as
    written); null where the column is empty or the key absent or null. `blob` and `key` are constants, not input."""
    if dialect == "duckdb":
        return sa.literal_column(f"json_extract_string(NULLIF(run.{blob}, ''), '$.{key}')", type_=sa.String)
    return sa.literal_column(f"(NULLIF(run.{blob}, '')::json ->> '{key}')", type_=sa.String)


def as_number(text: pl.Expr, kind: pl.DataType) -> pl.Expr:
    """A number read from its JSON text as the parsed value would be cast: null where it is no number, a fraction
    truncated where a whole number is read."""
    number = text.cast(pl.Float64(), strict=False)
    return number if kind == pl.Float64() else number.cast(kind, strict=False)
