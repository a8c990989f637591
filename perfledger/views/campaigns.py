"""Campaigns: every folder imported as one campaign, its score and rule; one campaign's attempts (failures kept with
their reasons) and its repeats summarised with their spread."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc.metrics import minutes
from perfledger.calc.repeats import REPEATS_SCHEMA, olympic_score, spread, summarise_repeats
from perfledger.mlperf_rules import rule_for
from perfledger.store.submissions import submissions
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
    the configurations whose IQRs overlap (their medians alone do not tell them apart). A configuration is also its
    submitter and system: two submitters' systems are never one configuration."""
    frame = keyed_outcomes(engine, campaign_id)
    if frame.is_empty():
        return pl.DataFrame(schema=REPEATS_SCHEMA)
    return summarise_repeats(frame.select("configuration", "kind", "metric", "value", "unit"), MEASURED)


def keyed_outcomes(engine: Engine, campaign_id: int) -> pl.DataFrame:
    """The campaign's attempts, each configuration with the submitter and system its run states (an MLPerf
    result's submission_org and system name) added to it."""
    frame = store.outcomes(engine, campaign_id)
    found = submissions(engine, [int(r) for r in frame["run_id"].drop_nulls().to_list()])
    if not found:
        return frame
    keyed = [_with_submission(text, found.get(int(rid)) if rid is not None else None)
             for text, rid in zip(frame["configuration"].to_list(), frame["run_id"].to_list(), strict=True)]
    return frame.with_columns(pl.Series("configuration", keyed, dtype=pl.String))


def _with_submission(configuration: str | None, submission: dict[str, str] | None) -> str | None:
    if not submission:
        return configuration
    return json.dumps(json.loads(configuration or "{}") | submission, sort_keys=True, default=str)


SCORE_SCHEMA: dict[str, pl.DataType] = {
    "submitter": pl.String(), "system": pl.String(), "benchmark": pl.String(), "runs": pl.Int64(),
    "runs needed": pl.Int64(), "still needed": pl.Int64(), "score (min)": pl.Float64(), "rule": pl.String(),
    "note": pl.String()}


def system_scores(engine: Engine, campaign_id: int) -> pl.DataFrame:
    """MLPerf's score for each submitter's system and benchmark of the campaign, under its benchmark's rule
    (data/mlperf_scoring.csv): the olympic mean in minutes, or none with why, and how many runs it still needs."""
    groups: dict[tuple[str, str, str], list[float | None]] = {}
    for row in keyed_outcomes(engine, campaign_id).iter_rows(named=True):
        config = json.loads(row["configuration"] or "{}")
        if not config.get("benchmark"):
            continue
        key = (config.get("submitter") or "unstated", config.get("system") or "unstated", str(config["benchmark"]))
        done = row["kind"] == OutcomeKind.COMPLETED.value and row["metric"] == "time_to_train_s"
        groups.setdefault(key, []).append(row["value"] if done else None)
    return pl.DataFrame([_score_row(key, times) for key, times in groups.items()], schema=SCORE_SCHEMA, orient="row")


def _score_row(key: tuple[str, str, str], times: list[float | None]) -> tuple[object, ...]:
    rule = rule_for(key[2])
    if rule is None:
        return (*key, len(times), None, None, None, None, f"no scoring rule for benchmark {key[2]!r}")
    scored = olympic_score(times, rule)
    value = minutes(scored.value) if scored.value is not None else None
    note = scored.problem or f"{scored.used} of {len(times)} runs averaged"
    return (*key, len(times), rule.runs, max(rule.runs - len(times), 0), value, f"{rule.describe()} ({rule.source})",
            note)


def campaign_header(engine: Engine, campaign_id: int) -> dict[str, Any] | None:
    """The campaign's row (name, kind, score and rule, metadata), or None when there is no such campaign."""
    return store.campaign(engine, campaign_id)


def score_headline(header: dict[str, Any], scores: pl.DataFrame | None = None) -> tuple[str, str]:
    """The campaign's score as its page leads with it: label and value. An MLPerf submission's in minutes, the unit
    MLCommons publishes its time to train in (the rule's note keeps the seconds), as stored at import (one campaign
    per submitter's system and benchmark, times the review's scaling factor); a campaign holding several systems
    (`scores`, system_scores(): a store imported before that) has no one score; any other as stored."""
    if scores is not None and scores.height > 1:
        return "Score: one per submitter's system (below)", f"{scores.height} systems"
    score, unit = header.get("score"), header.get("score_unit") or "none"
    if header.get("kind") == CampaignKind.MLPERF and unit == "s":
        return "Score: time to train (min, MLPerf's)", f"{minutes(score):,.2f}" if score is not None else "none"
    if score is None:
        return f"Score ({unit})", "none"
    return f"Score ({unit})", f"{score:,.6g}"


def outcome_counts(engine: Engine, campaign_id: int) -> dict[str, int]:
    return store.outcome_counts(store.outcomes(engine, campaign_id))


def run_ids(engine: Engine, campaign_id: int) -> list[int]:
    """The campaign's stored runs, in the order its attempts were read."""
    return store.campaign_run_ids(engine, campaign_id)


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
    precision, workload, layout and framework, as History names them), on the first figure those runs have."""
    run_ids = store.outcomes(engine, campaign_id)["run_id"].drop_nulls().to_list()
    if not run_ids:
        return []
    rows = history.series_rows(engine, run_ids=run_ids)
    rank = pl.col("metric").replace_strict({m: i for i, m in enumerate(history.METRICS)}, default=len(history.METRICS))
    per_run = rows.sort([rank, "run_id"]).unique("run_id", keep="first", maintain_order=True)  # each run's first figure
    firsts = per_run.unique("configuration", keep="first", maintain_order=True)
    return [(f"History of {r['configuration']}", _history_state(r))
            for r in firsts.sort("configuration").iter_rows(named=True)]


def _history_state(row: dict[str, Any]) -> HistoryView:
    return HistoryView(model=row["model"], accelerator=row["accelerator"], devices=row["devices"] or 0,
                       precision=row["precision"], workload=row["workload"], layout=row["layout"],
                       framework=row["framework"], metric=row["metric"])


FORMULAS: tuple[Callable[..., Any], ...] = (spread, olympic_score)
