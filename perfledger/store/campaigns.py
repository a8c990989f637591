"""Campaigns in the store: a folder's runs and outcomes written whole in one transaction, and read back.

A campaign is keyed by the hash of its files (names and contents), so importing the same folder again is a no-op.
A run whose bytes are already stored (imported alone, or in another campaign) is the same run: the outcome points
at it. Stores made before campaigns get the tables at their first write (perfledger.store.upgrade).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.campaigns import Attempt, CampaignPlan, CampaignSaved
from perfledger.store.engine import connection
from perfledger.store.read import query
from perfledger.store.write import run_id_of, store_log_run

_LIST_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.Int64(), "name": pl.String(), "kind": pl.String(), "imported_at": pl.Datetime("us", "UTC"),
    "attempts": pl.Int64(), "runs": pl.Int64(), "failed": pl.Int64(), "score": pl.Float64(), "score_unit": pl.String(),
    "score_rule": pl.String(), "score_note": pl.String()}
_OUTCOME_COLUMNS = ("id", "file_name", "line", "kind", "reason", "run_id", "metric", "value", "unit", "configuration")


def save_campaign(engine: Engine, plan: CampaignPlan, *, ingested_at: datetime | None = None) -> CampaignSaved:
    """Store the campaign, its runs and its outcomes in one transaction: all of it, or (on any error) none of it."""
    when = ingested_at or datetime.now(UTC)
    with connection(engine, write=True) as conn:
        existing = conn.scalar(sa.select(schema.campaign.c.id)
                               .where(schema.campaign.c.content_sha256 == plan.content_sha256))
        if existing is not None:
            return CampaignSaved(int(existing), created=False, run_ids=tuple(_run_ids(conn, int(existing))))
        campaign_id = _insert_campaign(conn, plan, when)
        run_ids = [_store_attempt(conn, campaign_id, attempt, when) for attempt in plan.attempts]
    return CampaignSaved(campaign_id, created=True, run_ids=tuple(r for r in run_ids if r is not None))


def _insert_campaign(conn: Connection, plan: CampaignPlan, when: datetime) -> int:
    meta = dict(plan.meta) | {"refusals": list(plan.refusals)}
    values = {"content_sha256": plan.content_sha256, "name": plan.name, "kind": plan.kind.value,
              "imported_at": when, "meta": json.dumps(meta, sort_keys=True, default=str),
              "score": plan.score.value, "score_unit": plan.score.unit, "score_rule": plan.score.rule,
              "score_note": plan.score.note}
    return int(conn.execute(sa.insert(schema.campaign).values(**values).returning(schema.campaign.c.id)).scalar_one())


def _store_attempt(conn: Connection, campaign_id: int, attempt: Attempt, when: datetime) -> int | None:
    run_id = None
    if attempt.prepared is not None:
        run_id = run_id_of(conn, attempt.prepared.content_sha256) or store_log_run(conn, attempt.prepared, when)
    row = attempt.as_row() | {"campaign_id": campaign_id, "run_id": run_id,
                              "configuration": json.dumps(dict(attempt.configuration), sort_keys=True, default=str)}
    conn.execute(sa.insert(schema.outcome).values(**row))
    return run_id


def _run_ids(conn: Connection, campaign_id: int) -> list[int]:
    stmt = (sa.select(schema.outcome.c.run_id).where(schema.outcome.c.campaign_id == campaign_id,
                                                     schema.outcome.c.run_id.is_not(None))
            .order_by(schema.outcome.c.id))
    return [int(r) for r in conn.execute(stmt).scalars()]


def campaign_run_ids(engine: Engine, campaign_id: int) -> list[int]:
    """The stored runs of a campaign, in the order its attempts were read (empty for an unknown campaign)."""
    with connection(engine, write=False) as conn:
        if not _has_campaigns(conn):
            return []
        return _run_ids(conn, campaign_id)


def _has_campaigns(conn: Connection) -> bool:
    return sa.inspect(conn).has_table(schema.outcome.name)


def campaigns(engine: Engine) -> pl.DataFrame:
    """One row per campaign, newest first: id, name, kind, imported_at, attempts, runs, failed, score, unit, rule."""
    c, o = schema.campaign, schema.outcome
    failed = sa.cast(sa.func.sum(sa.case((o.c.kind != "completed", 1), else_=0)), sa.BigInteger)
    stmt = (sa.select(c.c.id, c.c.name, c.c.kind, c.c.imported_at, sa.func.count(o.c.id).label("attempts"),
                      sa.func.count(o.c.run_id).label("runs"), sa.func.coalesce(failed, 0).label("failed"),
                      c.c.score, c.c.score_unit, c.c.score_rule, c.c.score_note)
            .select_from(c.outerjoin(o, o.c.campaign_id == c.c.id))
            .group_by(c.c.id, c.c.name, c.c.kind, c.c.imported_at, c.c.score, c.c.score_unit, c.c.score_rule,
                      c.c.score_note)
            .order_by(c.c.id.desc()))
    with connection(engine, write=False) as conn:
        if not _has_campaigns(conn):
            return pl.DataFrame(schema=_LIST_SCHEMA)
    return query(engine, stmt)


def campaign(engine: Engine, campaign_id: int) -> dict[str, Any] | None:
    """The campaign's row, its metadata JSON decoded; None when there is no such campaign."""
    with connection(engine, write=False) as conn:
        if not _has_campaigns(conn):
            return None
        row = conn.execute(sa.select(schema.campaign).where(schema.campaign.c.id == campaign_id)).mappings().first()
    if row is None:
        return None
    return dict(row) | {"meta": json.loads(row["meta"] or "{}")}


def outcomes(engine: Engine, campaign_id: int) -> pl.DataFrame:
    """The campaign's attempts, in the order they were read: file, line, kind, reason, run, figure, configuration."""
    o = schema.outcome
    stmt = sa.select(*(o.c[name] for name in _OUTCOME_COLUMNS)).where(o.c.campaign_id == campaign_id).order_by(o.c.id)
    return query(engine, stmt)


def outcome_counts(frame: pl.DataFrame) -> dict[str, int]:
    """Attempts by outcome kind."""
    if frame.is_empty():
        return {}
    counted = frame.group_by("kind").len().sort("kind")
    return dict(zip(counted["kind"].to_list(), counted["len"].to_list(), strict=True))
