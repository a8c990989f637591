"""A page's table as bytes (the Download button and `python -m perfledger export` give the same), a page's chart as a
PNG or SVG file, and the stored rows a table was computed from."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import parse_qsl

import polars as pl
from sqlalchemy import Engine

from perfledger import names, numbers, store
from perfledger.errors import InvalidQuery
from perfledger.views.audit import WARNING_KEYS, implausible_warnings
from perfledger.views.registry import state_from_query, table
from perfledger.views.remembered import until_written

Format = Literal["csv", "json"]
ImageFormat = Literal["png", "svg"]
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
    """A table as CSV, as a reader reads it (display names, shares in %, every digit: perfledger.numbers; text cells
    made spreadsheet-safe; a final newline), or as JSON records under the stored names and units; exact bytes."""
    if fmt == "csv":
        buffer = io.BytesIO()  # straight to bytes: write_csv() -> str -> encode() copied the file twice (1.7x)
        spreadsheet_safe(names.labelled(numbers.for_reading(frame))).write_csv(buffer)
        return buffer.getvalue()
    if fmt == "json":
        return (json.dumps(frame.to_dicts(), default=str, allow_nan=False, indent=1) + "\n").encode()
    raise InvalidQuery(f"unknown export format {fmt!r}; use csv or json")


@functools.lru_cache(maxsize=16)
def chart_image(spec: str, fmt: ImageFormat) -> bytes:
    """A chart's Vega-Lite JSON drawn as a file (vl-convert, no browser): PNG at twice the screen's pixels, or SVG.

    0.1-0.5 s a chart, so a page asks for it only when the file is downloaded; cached by spec for repeat clicks.
    """
    # vl-convert (a bundled renderer, heavy) loads only when a chart file is downloaded
    import vl_convert

    if fmt == "png":
        return bytes(vl_convert.vegalite_to_png(spec, scale=2))
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec).encode()
    raise InvalidQuery(f"unknown image format {fmt!r}; use png or svg")


_UNSAFE_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9._=,+-]+|\.{2,}")
_MAX_STATE_CHARS = 80


def table_file_name(slug: str, query: str) -> str:
    """`perfledger-SLUG[-QUERY].csv`: a page's table file, named after the page and the view's URL query (as
    chart_file_name), so the CSVs of two views never share a name.

    >>> table_file_name("speedups", "p=fsdp&sort=model")
    'perfledger-speedups-p=fsdp_sort=model.csv'
    """
    return chart_file_name(slug, "", query, "csv")


def chart_file_name(slug: str, chart: str, query: str, fmt: str) -> str:
    """`perfledger-SLUG-CHART[-QUERY].FMT`: the page, the chart and the view's URL query, in characters every file
    system keeps; a long query is cut and ends in a hash of the whole, so two views never share a name. An empty
    `chart` names the page's table."""
    state = _UNSAFE_IN_FILE_NAME.sub("_", query.lstrip("?")).strip("._")
    if len(state) > _MAX_STATE_CHARS:
        state = f"{state[:_MAX_STATE_CHARS - 9]}-{hashlib.sha256(query.encode()).hexdigest()[:8]}"
    name = (_UNSAFE_IN_FILE_NAME.sub("_", chart).strip("._") or "chart") if chart else ""
    return "-".join(part for part in ("perfledger", slug, name, state) if part) + f".{fmt}"


def export(slug: str, query: str, engine: Engine, fmt: Format = "csv") -> bytes:
    """The page's table for a URL query string, rendered: `render(table(slug, state_from_query(...)))`. A query
    the page would explain and ignore a part of (an unknown key, a value out of range) is refused: InvalidQuery
    with the page's sentences, for a script cannot read the warning a page shows."""
    state = state_from_query(slug, parse_qsl(query.lstrip("?"), keep_blank_values=True))
    if state.problems:
        said = " ".join(p[:1].lower() + p[1:] for p in state.problems)
        raise InvalidQuery(f"nothing exported: the {slug} page would ignore part of this query ({said.rstrip('.')})")
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


@until_written(keep=32)
def implausible_in(table_frame: pl.DataFrame, engine: Engine) -> list[str]:
    """The audit's warning for every stored result a page's table was computed from (its '... result id' columns)
    whose configuration the audit calls implausible: one sentence per configuration, naming the result ids."""
    ids = {int(i) for c in table_frame.columns if c.endswith("result id") for i in table_frame[c].drop_nulls()}
    warnings = implausible_warnings(engine) if ids else {}
    if not warnings:
        return []
    configs = list(warnings)  # read only the rows of the warned sources, models and accelerators, not every row

    def among(key: str) -> list[Any] | None:
        values = {c[WARNING_KEYS.index(key)] for c in configs}
        return None if None in values else sorted(values)

    rows = store.results(engine, source_ids=among("source_id"), model_ids=among("model_id"),
                         accelerator_ids=among("accelerator_id"),
                         columns=("id", *WARNING_KEYS)).filter(pl.col("id").is_in(sorted(ids)))
    found: dict[tuple[Any, ...], list[int]] = {}
    for r in rows.sort("id").to_dicts():
        config = tuple(r[k] for k in WARNING_KEYS)
        if config in warnings:
            found.setdefault(config, []).append(int(r["id"]))
    return [f"{_configuration(config)} ({config[0]}; result {', '.join(map(str, ids_))}): {warnings[config]}"
            for config, ids_ in found.items()]


def warnings_title(lines: list[str]) -> str:
    """The one line the audit's warnings on a page are folded under: a figure plausible only at a precision its
    source left unstated is not called implausible.

    >>> warnings_title(["x: precision unstated: plausible only in FP8 (42% ...)"])
    'The audit finds 1 configuration among these figures plausible only at a precision its source did not state'
    >>> warnings_title(["x: 84% of the dense bf16 peak exceeds the 70% ceiling", "y: ..."])
    'The audit calls 2 configurations among these figures implausible'
    """
    count = f"{len(lines)} configuration{'s' if len(lines) > 1 else ''} among these figures"
    if all("plausible only in" in line for line in lines):
        return f"The audit finds {count} plausible only at a precision its source did not state"
    return f"The audit calls {count} implausible"


def _configuration(config: tuple[Any, ...]) -> str:
    """A warned configuration (WARNING_KEYS) in words; an unstated field says so, never Python's None."""
    _, model, accelerator, devices, _ = config
    on = f"{devices:,} × {accelerator}" if devices else f"{accelerator} (devices unstated)"
    return f"{model or 'an unnamed model'} on {on}"


@until_written(keep=32)
def row_notes(table_frame: pl.DataFrame, engine: Engine) -> list[tuple[list[int], str]]:
    """The notes the sources attached to the stored rows a page's table was computed from ('... result id'
    columns): each distinct note once, with the ids of the rows that carry it, in id order."""
    ids = sorted({int(i) for c in table_frame.columns if c.endswith("result id") for i in table_frame[c].drop_nulls()})
    if not ids:
        return []
    rows = store.results(engine, ids=ids, columns=("id", "note")).filter(pl.col("note").fill_null("") != "")
    carried: dict[str, list[int]] = {}
    for rid, note in rows.sort("id").iter_rows():
        carried.setdefault(str(note), []).append(int(rid))
    return [(ids_, note) for note, ids_ in carried.items()]
