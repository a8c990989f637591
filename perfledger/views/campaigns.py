"""Campaigns: every folder imported as one campaign, its score and rule; one campaign's attempts (failures kept with
their reasons) and its repeats summarised with their spread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc.repeats import REPEATS_SCHEMA, olympic_score, spread, summarise_repeats
from perfledger.vocabulary import OutcomeKind

# A run stopped from outside (cancelled, or killed at its time limit) measured the steps it logged
MEASURED = (OutcomeKind.COMPLETED.value, OutcomeKind.CANCELLED.value, OutcomeKind.TIMEOUT.value)
ATTEMPT_COLUMNS = ("file_name", "kind", "reason", "line", "run_id", "metric", "value", "unit", "configuration")
LIST_COLUMNS = ("id", "name", "kind", "imported_at", "attempts", "runs", "failed", "score", "score_unit",
                "score_rule", "score_note")


@dataclass(frozen=True)
class CampaignsView:
    campaign: int = u.key("c", 0, low=0, high=u.MAX_ID)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.campaign:
            return f"Campaign {self.campaign}: every attempt, failures kept with their reason"
        return "Every campaign (a folder imported at once) with its score and the rule that gave it"


def table(state: CampaignsView, engine: Engine) -> pl.DataFrame:
    """The campaign list, or one campaign's attempts; the CSV of the page and of `perfledger export campaigns`."""
    if state.campaign:
        return store.outcomes(engine, state.campaign).select(ATTEMPT_COLUMNS)
    return store.campaigns(engine).select(LIST_COLUMNS)


def repeats(engine: Engine, campaign_id: int) -> pl.DataFrame:
    """The campaign's configurations with the median and spread of their measured attempts (IQR, min-max, n), and
    the configurations whose IQRs overlap (their medians alone do not tell them apart)."""
    frame = store.outcomes(engine, campaign_id)
    if frame.is_empty():
        return pl.DataFrame(schema=REPEATS_SCHEMA)
    return summarise_repeats(frame.select("configuration", "kind", "metric", "value", "unit"), MEASURED)


def campaign_header(engine: Engine, campaign_id: int) -> dict[str, Any] | None:
    """The campaign's row (name, kind, score and rule, metadata), or None when there is no such campaign."""
    return store.campaign(engine, campaign_id)


def outcome_counts(engine: Engine, campaign_id: int) -> dict[str, int]:
    return store.outcome_counts(store.outcomes(engine, campaign_id))


FORMULAS: tuple[Callable[..., Any], ...] = (spread, olympic_score)
