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
from perfledger.calc.metrics import minutes
from perfledger.calc.repeats import REPEATS_SCHEMA, olympic_score, spread, summarise_repeats
from perfledger.views import history
from perfledger.views.history import HistoryView
from perfledger.views.runs import RunsView
from perfledger.vocabulary import CampaignKind, OutcomeKind

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


def score_headline(header: dict[str, Any]) -> tuple[str, str]:
    """The campaign's score as its page leads with it: label and value. An MLPerf submission's in minutes, the unit
    MLCommons publishes its time to train in (the rule's note keeps the seconds); any other as stored."""
    score, unit = header.get("score"), header.get("score_unit") or "none"
    if score is None:
        return f"Score ({unit})", "none"
    if header.get("kind") == CampaignKind.MLPERF and unit == "s":
        return "Score: time to train (min, MLPerf's)", f"{minutes(score):,.2f}"
    return f"Score ({unit})", f"{score:,.6g}"


def outcome_counts(engine: Engine, campaign_id: int) -> dict[str, int]:
    return store.outcome_counts(store.outcomes(engine, campaign_id))


def check_command(campaign_id: int) -> str:
    """The command a CI job runs to judge the campaign's runs against their configurations' history."""
    return f"python -m perfledger check campaign:{campaign_id}"


def run_views(engine: Engine, campaign_id: int) -> list[tuple[str, RunsView]]:
    """Each of the campaign's stored runs as the Runs page shows it, labelled with its id, file and outcome (a
    page links to it with perfledger.views.links.to)."""
    frame = store.outcomes(engine, campaign_id).filter(pl.col("run_id").is_not_null())
    return [(f"Run {r['run_id']} · {r['file_name']} ({r['kind']})", RunsView(run=r["run_id"]))
            for r in frame.iter_rows(named=True)]


def history_views(engine: Engine, campaign_id: int) -> list[tuple[str, HistoryView]]:
    """The History of each configuration the campaign's runs have (the runs' own model, accelerator, devices,
    precision, layout and framework, as History names them), on the first figure those runs have."""
    run_ids = store.outcomes(engine, campaign_id)["run_id"].drop_nulls().to_list()
    if not run_ids:
        return []
    rows = history.series_rows(engine, run_ids=run_ids)
    rank = pl.col("metric").replace_strict({m: i for i, m in enumerate(history.METRICS)}, default=len(history.METRICS))
    firsts = rows.sort([rank, "run_id"]).unique("configuration", keep="first", maintain_order=True)
    return [(f"History of {r['configuration']}", _history_state(r))
            for r in firsts.sort("configuration").iter_rows(named=True)]


def _history_state(row: dict[str, Any]) -> HistoryView:
    return HistoryView(model=row["model"], accelerator=row["accelerator"], devices=row["devices"] or 0,
                       precision=row["precision"], layout=row["layout"], framework=row["framework"],
                       metric=row["metric"])


FORMULAS: tuple[Callable[..., Any], ...] = (spread, olympic_score)
