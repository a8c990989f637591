"""A page's table as bytes (the Download button and `python -m perfledger export` give the same), and the stored
rows a table was computed from."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import parse_qsl

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.errors import InvalidQuery
from perfledger.views.registry import state_from_query, table

Format = Literal["csv", "json"]
INPUT_COLUMNS = ("id", "source_id", "model_id", "accelerator_id", "n_devices", "framework", "framework_version",
                 "precision", "seq_len", "global_batch", "metric", "value", "unit", "evidence", "locator")


def _not_a_formula(column: pl.Expr) -> pl.Expr:
    """Text cells a spreadsheet would run as a formula, prefixed with a single quote (OWASP CSV injection);
    a cell that reads as a finite number (-3.5, +1e9) stays as it is."""
    text = column.cast(pl.String)
    risky = text.str.starts_with("=") | text.str.starts_with("@") | text.str.starts_with("\t") \
        | text.str.starts_with("\r") | ((text.str.starts_with("+") | text.str.starts_with("-"))
                                        & ~text.str.strip_chars().cast(pl.Float64, strict=False).is_finite().fill_null(False))
    return pl.when(risky).then(pl.lit("'") + text).otherwise(text)


def spreadsheet_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every text cell a spreadsheet would run as a formula neutralised; numbers untouched."""
    text_columns = [name for name, dtype in frame.schema.items() if dtype in (pl.String, pl.Categorical, pl.Enum)]
    return frame.with_columns(_not_a_formula(pl.col(name)).alias(name) for name in text_columns)


def render(frame: pl.DataFrame, fmt: Format = "csv") -> bytes:
    """A table as CSV (Polars write_csv, text cells made spreadsheet-safe) or JSON records; exact bytes."""
    if fmt == "csv":
        buffer = io.BytesIO()  # straight to bytes: write_csv() -> str -> encode() copied the file twice (1.7x)
        spreadsheet_safe(frame).write_csv(buffer)
        return buffer.getvalue()
    if fmt == "json":
        return (json.dumps(frame.to_dicts(), default=str, allow_nan=False, indent=1) + "\n").encode()
    raise InvalidQuery(f"unknown export format {fmt!r}; use csv or json")


def export(slug: str, query: str, engine: Engine, fmt: Format = "csv") -> bytes:
    """The page's table for a URL query string, rendered: `render(table(slug, state_from_query(...)))`."""
    state = state_from_query(slug, parse_qsl(query.lstrip("?"), keep_blank_values=True))
    return render(table(slug, state, engine), fmt)


def input_rows(table_frame: pl.DataFrame, engine: Engine) -> pl.DataFrame:
    """The stored result rows a page's table was computed from (every '... result id' column).

    Reads only the columns shown, and only the metrics the table holds: an input row's metric is its table row's.
    """
    ids = sorted({int(i) for c in table_frame.columns if c.endswith("result id")
                  for i in table_frame[c].drop_nulls().to_list()})
    metrics: list[str] | None = None if ids else []
    if ids and "metric" in table_frame.columns:
        metrics = sorted(set(table_frame["metric"].drop_nulls().to_list()))
    rows = store.results(engine, metric=metrics, columns=INPUT_COLUMNS)
    return rows.filter(pl.col("id").is_in(ids)).select(INPUT_COLUMNS)


def rows_as_inputs(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Result rows already read (e.g. the measured row a projection used), shown as input rows."""
    return pl.DataFrame([{c: r.get(c) for c in INPUT_COLUMNS} for r in rows])
