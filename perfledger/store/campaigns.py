"""Campaigns in the store: a folder's runs and outcomes written whole in one transaction, and read back.

A campaign is keyed by the hash of its files (names and contents), so importing the same folder again is a no-op.
A run whose bytes are already stored (imported alone, or in another campaign) is the same run: the outcome points
at it. Stores made before campaigns get the tables at their first write (perfledger.store.upgrade).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.campaigns import Attempt, CampaignPlan, CampaignSaved
from perfledger.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError, StoreNotInitialised
from perfledger.store.engine import connection, mask_url
from perfledger.store.read import query
from perfledger.store.write import insert_rows, store_log_runs

_LIST_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.Int64(), "name": pl.String(), "kind": pl.String(), "imported_at": pl.Datetime("us", "UTC"),
    "attempts": pl.Int64(), "runs": pl.Int64(), "failed": pl.Int64(), "score": pl.Float64(), "score_unit": pl.String(),
    "score_rule": pl.String(), "score_note": pl.String()}
_OUTCOME_COLUMNS = ("id", "file_name", "line", "kind", "reason", "run_id", "metric", "value", "unit", "configuration")


def save_campaign(engine: Engine, plan: CampaignPlan, *, ingested_at: datetime | None = None) -> CampaignSaved:
    """Store the campaign, its runs and its outcomes in one transaction: all of it, or (on any error) none of it."""
    return _save_together(engine, [plan], ingested_at or datetime.now(UTC))[0]


def save_campaigns(engine: Engine, plans: Sequence[CampaignPlan], *,
                   ingested_at: datetime | None = None) -> list[CampaignSaved | StoreError]:
    """Store campaigns (a round's), each whole in one transaction, several to a transaction up to
    RUNS_PER_TRANSACTION runs: a DuckDB commit is a checkpoint (50-300 ms here), and one per campaign was a third of
    a round's import. Should a transaction fail, its campaigns are stored one to a transaction, so that a campaign
    that cannot be stored (its error in its place in the list) leaves every other one stored. A store that cannot
    be written at all (busy, full, read-only, not initialised) raises at once."""
    when = ingested_at or datetime.now(UTC)
    saved: list[CampaignSaved | StoreError] = []
    for batch in _batches(plans):
        try:
            saved += _save_together(engine, batch, when)
        except _WHOLE_STORE:
            raise
        except _ONE_CAMPAIGN:
            saved += [_save_alone(engine, plan, when) for plan in batch]
    return saved


# A fault of the store itself, which every campaign would meet; anything else a campaign's own (its step files gone)
_WHOLE_STORE = (StoreBusy, DiskFull, ReadOnlyStore, StoreNotInitialised)
_ONE_CAMPAIGN = (StoreError, OSError, pl.exceptions.PolarsError)


def _save_alone(engine: Engine, plan: CampaignPlan, when: datetime) -> CampaignSaved | StoreError:
    try:
        return _save_together(engine, [plan], when)[0]
    except _WHOLE_STORE:
        raise
    except _ONE_CAMPAIGN as exc:
        why = exc if isinstance(exc, StoreError) else StoreError(mask_url(str(engine.url)), str(exc).splitlines()[0])
        return StoreError(mask_url(str(engine.url)), f"campaign {plan.name!r} was not stored: {why.reason}")


RUNS_PER_TRANSACTION = 400  # about a second of writing: the DuckDB file stays free for readers in between


def _batches(plans: Sequence[CampaignPlan]) -> Iterator[list[CampaignPlan]]:
    batch: list[CampaignPlan] = []
    runs = 0
    for plan in plans:
        if batch and runs + len(plan.attempts) > RUNS_PER_TRANSACTION:
            yield batch
            batch, runs = [], 0
        batch.append(plan)
        runs += len(plan.attempts)
    if batch:
        yield batch


def _save_together(engine: Engine, plans: Sequence[CampaignPlan], when: datetime) -> list[CampaignSaved]:
    """The campaigns in one transaction: those stored before found by their hash, the others written in bulk (their
    runs, steps, results and outcomes all at once)."""
    c = schema.campaign
    with connection(engine, write=True) as conn:
        hashes = list({p.content_sha256 for p in plans})
        ids = {str(h): int(i) for h, i in conn.execute(sa.select(c.c.content_sha256, c.c.id)
                                                         .where(c.c.content_sha256.in_(hashes)))}
        stored_before = set(ids)
        fresh = list({p.content_sha256: p for p in plans if p.content_sha256 not in ids}.values())
        ids |= {p.content_sha256: _insert_campaign(conn, p, when) for p in fresh}
        attempts = [(ids[p.content_sha256], a) for p in fresh for a in p.attempts]
        run_ids = _store_attempts(conn, attempts, when)
        ran = {campaign_id: [r for (cid, _), r in zip(attempts, run_ids, strict=True) if cid == campaign_id
                             and r is not None] for campaign_id in {ids[p.content_sha256] for p in fresh}}
        for sha in stored_before:
            ran[ids[sha]] = _run_ids(conn, ids[sha])
    return [CampaignSaved(ids[p.content_sha256], created=p.content_sha256 not in stored_before,
                          run_ids=tuple(ran[ids[p.content_sha256]])) for p in plans]


def _insert_campaign(conn: Connection, plan: CampaignPlan, when: datetime) -> int:
    meta = dict(plan.meta) | {"refusals": list(plan.refusals)}
    values = {"content_sha256": plan.content_sha256, "name": plan.name, "kind": plan.kind.value,
              "imported_at": when, "meta": json.dumps(meta, sort_keys=True, default=str),
              "score": plan.score.value, "score_unit": plan.score.unit, "score_rule": plan.score.rule,
              "score_note": plan.score.note}
    return int(conn.execute(sa.insert(schema.campaign).values(**values).returning(schema.campaign.c.id)).scalar_one())


def _store_attempts(conn: Connection, attempts: Sequence[tuple[int, Attempt]], when: datetime) -> list[int | None]:
    """The attempts' runs (a run stored before is that run) and outcomes, in bulk; each attempt's run id."""
    prepared = [a.prepared for _, a in attempts if a.prepared is not None]
    stored = iter(store_log_runs(conn, prepared, when))
    run_ids = [next(stored) if a.prepared is not None else None for _, a in attempts]
    rows = [a.as_row() | {"campaign_id": campaign_id, "run_id": run_id,
                          "configuration": json.dumps(dict(a.configuration), sort_keys=True, default=str)}
            for (campaign_id, a), run_id in zip(attempts, run_ids, strict=True)]
    insert_rows(conn, schema.outcome, rows)
    return run_ids


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
