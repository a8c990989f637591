"""Logged values in the ledger's units: numbers printed as text ("146ms", "2.3K", "10/438"), times with their unit
glued on, durations, timestamps and rates, by the key vocabulary's row for the name."""

from __future__ import annotations

import polars as pl

from ingest.parsers._times import duration_seconds, timestamp_seconds
from perfledger.metric_keys import KeyMapping, KeyRow

_LEADING_NUMBER = r"^\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))"
_MULTIPLIERS = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _number(name: str) -> pl.Expr:
    """A column's values as numbers: numbers as they are; text by its leading number ("146ms" -> 146, "2.3K" ->
    2300, "10/438" -> 10)."""
    text = pl.col(name).cast(pl.String)
    number = text.str.extract(_LEADING_NUMBER, 1).cast(pl.Float64, strict=False)
    suffix = text.str.extract(_LEADING_NUMBER + r"\s*([KMGTB])(?:[^A-Za-z]|$)", 2)
    return number * suffix.replace_strict(_MULTIPLIERS, default=1.0, return_dtype=pl.Float64)


# a time printed with its unit glued on ("dt: 5.04ms", "iter_time=1.2s"): the printed unit wins over the row's
_TIME_SUFFIXES = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "min": 60.0,
                  "h": 3600.0}
_TIME_ROW_UNITS = frozenset({"s", "ms", "us", "min", "h"})


def _time_with_its_unit(name: str, row: KeyRow) -> pl.Expr:
    """A time column read as text: seconds by the unit printed after the number when there is one, else by the
    row's unit."""
    text = pl.col(name).cast(pl.String)
    glued = text.str.extract(_LEADING_NUMBER + r"\s*(ns|us|µs|ms|secs?|s|min|h)\s*$", 2)
    factor = glued.replace_strict(_TIME_SUFFIXES, default=None, return_dtype=pl.Float64)
    return _number(name) * pl.coalesce(factor, pl.lit(row.factor))


def _converted(name: str, row: KeyRow, dtype: pl.DataType) -> pl.Expr:
    """One present key's values in the ledger's unit."""
    unit = row.unit
    if unit == "duration":
        text = pl.col(name).cast(pl.String)
        return text.map_elements(duration_seconds, return_dtype=pl.Float64, skip_nulls=True)
    if unit == "n/total":
        return pl.col(name).cast(pl.String).str.extract(r"^\s*(\d+)", 1).cast(pl.Float64, strict=False)
    if row.column == "wall_time" and not dtype.is_numeric():  # a timestamp printed as text, in any common form
        return pl.col(name).cast(pl.String).map_elements(lambda t: timestamp_seconds(t, row.factor),
                                                         return_dtype=pl.Float64, skip_nulls=True)
    if unit == "1/s":
        value = _number(name)
        return pl.when(value > 0).then(1.0 / value)
    if unit in _TIME_ROW_UNITS and not dtype.is_numeric():
        return _time_with_its_unit(name, row)
    value = pl.col(name).cast(pl.Float64) if dtype.is_numeric() else _number(name)
    if row.column == "reported_mfu":
        return pl.when(value > 0).then(value * row.factor)
    return value * row.factor if row.factor != 1.0 else value


def column_of(mapping: KeyMapping, column: str, schema: pl.Schema) -> pl.Expr | None:
    exprs = [_converted(name, row, schema[name]) for name, row in mapping.keys_of(column) if name in schema]
    if not exprs:
        return None
    return pl.coalesce(exprs) if len(exprs) > 1 else exprs[0]
