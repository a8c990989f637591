"""Overview: result rows in the ledger, counted by one column."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u

GROUPINGS = ("kind", "accelerator", "model", "metric", "framework")
_COLUMNS = {"kind": "source_kind", "accelerator": "accelerator_id", "model": "model_id", "metric": "metric",
            "framework": "framework"}


@dataclass(frozen=True)
class OverviewView:
    by: str = u.key("by", "kind", choices=GROUPINGS)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        return f"Result rows in the ledger, by {self.by}"


def table(state: OverviewView, engine: Engine) -> pl.DataFrame:
    column = _COLUMNS[state.by]
    counts = store.result_counts(engine, column)
    return (
        counts.select(_named(pl.col(column)).fill_null("(not stated)").alias(state.by),
                      pl.col("result rows").cast(pl.UInt32), pl.col("sources").cast(pl.UInt32),
                      pl.col("runs").cast(pl.UInt32))
        .sort(["result rows", state.by], descending=[True, False])
    )


def _named(group: pl.Expr) -> pl.Expr:
    """Figures measured from ingested runs (no source) are said to be so, with how many runs they come from."""
    runs = pl.col("runs").cast(pl.String)
    return (pl.when(group == store.MEASURED_KIND)
            .then(pl.lit("measured from ") + runs + pl.lit(" ingested run") + pl.when(pl.col("runs") == 1)
                  .then(pl.lit("")).otherwise(pl.lit("s")))
            .otherwise(group))


FORMULAS: tuple[Callable[..., Any], ...] = ()
