"""Sources: every source with its kind, date, link and evidence, and the rows it backs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.catalog.link import link_command
from perfledger.vocabulary import LogFormat, SourceKind


@dataclass(frozen=True)
class SourcesView:
    source: str = u.key("src", "")
    kinds: tuple[str, ...] = u.key("k", (), choices=tuple(SourceKind))
    result: int = u.key("result", 0, low=0, label="result")
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.result:
            return f"Result {self.result}: every stored field, its source, the audit's verdict and the views showing it"
        return f"Rows backed by source {self.source}" if self.source else "Every source and the rows it backs"


# A source's rows as a 1440px screen reads them: the figure, its value and unit, then where it was printed.
SOURCE_ROWS = ("id", "metric", "value", "unit", "model_id", "accelerator_id", "n_devices", "evidence", "locator",
               "framework", "note")


def table(state: SourcesView, engine: Engine) -> pl.DataFrame:
    """A result's fields (result=ID), a source's rows (src=ID), or every source."""
    if state.result:
        # a cycle: permalink reads every view through registry, sources among them (sources -> permalink -> registry -> sources)
        from perfledger.views.permalink import detail

        return detail(engine, state.result)
    if state.source:
        rows = store.results(engine, source_ids=[state.source])
        return rows.select(SOURCE_ROWS)
    frame = sources(engine)
    if state.kinds:
        frame = frame.filter(pl.col("kind").is_in(list(state.kinds)))
    return frame.select("id", "kind", "url", "n_results", "date", "title", "publisher", "evidence")


# How imports were credited to the upload token before its name: 12 hex digits of its unsalted SHA-256, which gave
# a weak token away to a dictionary. Stores written then still hold it; it is never shown.
_TOKEN_HASH = r" with token sha256:[0-9a-f]{12}"


def sources(engine: Engine) -> pl.DataFrame:
    """Every source with the rows it backs (store.sources), an import's evidence without the token hash that
    earlier releases stored in it."""
    frame = store.sources(engine)
    return frame.with_columns(pl.col("evidence").str.replace(_TOKEN_HASH, " with the upload token (its hash hidden)"))


IMPORT_KINDS = (SourceKind.UPLOAD.value, SourceKind.CLI.value)
IMPORT_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(), "kind": pl.String(), "file": pl.String(), "rows": pl.Int64(),
    "imported (UTC)": pl.Datetime(time_zone="UTC"), "run": pl.Int64(),
}


def imports(engine: Engine) -> pl.DataFrame:
    """Claim imports, newest first: per imported file (a stored claims file) and source, the rows stored and when;
    the rows of sources of kind upload or cli that no stored file brought come as one row with the file blank."""
    kinds = store.sources(engine).select(source="id", kind="kind")
    runs = store.runs(engine).filter(pl.col("format") == LogFormat.CLAIMS_CSV.value)
    ids = kinds.filter(pl.col("kind").is_in(IMPORT_KINDS))["source"].to_list()
    results = store.results(engine, columns=("source_id", "run_id")).filter(
        pl.col("run_id").is_in(runs["id"].implode()) | pl.col("source_id").is_in(ids))
    frame = (results.group_by(source="source_id", run="run_id").agg(rows=pl.len())
             .join(kinds, on="source", how="left")
             .join(runs.select(run="id", file="file_name", imported="ingested_at"), on="run", how="left")
             .rename({"imported": "imported (UTC)"}))
    return frame.select(list(IMPORT_SCHEMA)).cast(IMPORT_SCHEMA).sort(  # type: ignore[arg-type]
        ["imported (UTC)", "source"], descending=[True, False], nulls_last=True)


def unlinked(engine: Engine) -> pl.DataFrame:
    """Printed model and accelerator names no catalog row claims (perfledger.store.unlinked_names), each with the
    command that links it to its nearest catalog id (ID to fill in when there is none)."""
    frame = store.unlinked_names(engine)
    nearest = [n.split(", ")[0] if n else "ID" for n in frame["nearest"].to_list()]
    commands = [link_command(name, n) for name, n in zip(frame["printed_name"].to_list(), nearest, strict=True)]
    return frame.with_columns(pl.Series("link with", commands, dtype=pl.String()))


def source_row(sources_frame: pl.DataFrame, source_id: str) -> dict[str, Any]:
    return sources_frame.filter(pl.col("id") == source_id).row(0, named=True)


FORMULAS: tuple[Callable[..., Any], ...] = ()
