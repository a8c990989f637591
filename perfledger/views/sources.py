"""Sources: every source with its kind, date, link and evidence, and the rows it backs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.vocabulary import SourceKind


@dataclass(frozen=True)
class SourcesView:
    source: str = u.key("src", "")
    kinds: tuple[str, ...] = u.key("k", (), choices=tuple(SourceKind))
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        return f"Rows backed by source {self.source}" if self.source else "Every source and the rows it backs"


def table(state: SourcesView, engine: Engine) -> pl.DataFrame:
    if state.source:
        rows = store.results(engine, source_ids=[state.source])
        return rows.select("id", "model_id", "accelerator_id", "n_devices", "framework", "metric", "value", "unit",
                           "evidence", "locator")
    frame = store.sources(engine)
    if state.kinds:
        frame = frame.filter(pl.col("kind").is_in(list(state.kinds)))
    return frame.select("id", "kind", "date", "title", "publisher", "url", "evidence", "n_results")


def source_row(sources_frame: pl.DataFrame, source_id: str) -> dict[str, Any]:
    return sources_frame.filter(pl.col("id") == source_id).row(0, named=True)


FORMULAS: tuple[Callable[..., Any], ...] = ()
