"""Reads for a configuration's history: the figures ingested runs produced, each with the date its run ran."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema
from perfledger.errors import InvalidInput
from perfledger.store.campaigns import campaign_run_ids
from perfledger.store.engine import connection
from perfledger.store.read import query
from perfledger.store.upgrade import run_date
from perfledger.vocabulary import LogFormat

CONFIG_COLUMNS = ("model_id", "accelerator_id", "n_devices", "precision", "workload", "framework", "tp", "pp", "dp",
                  "cp", "ep", "strategy")


def run_figures(engine: Engine, metrics: Sequence[str], *, run_ids: Sequence[int] | None = None) -> pl.DataFrame:
    """The result rows of ingested runs (logs, not claims files) for `metrics` (every run, or only `run_ids`), with
    their run's file name, log date (`ran_at`, null where the log printed none) and ingest date."""
    r, run = schema.result, schema.run
    with connection(engine, write=False) as conn:
        ran_at = run_date(conn)
    stmt = (sa.select(r.c.id, r.c.run_id, *[r.c[c] for c in CONFIG_COLUMNS], r.c.framework_version, r.c.metric,
                      r.c.value, r.c.unit, r.c.evidence, run.c.file_name, run.c.format, ran_at, run.c.ingested_at)
            .select_from(r.join(run, r.c.run_id == run.c.id))
            .where(r.c.metric.in_(list(metrics)), run.c.format != LogFormat.CLAIMS_CSV.value)
            .order_by(r.c.run_id, r.c.id))
    if run_ids is not None:
        stmt = stmt.where(r.c.run_id.in_(list(run_ids)))
    return query(engine, stmt)


def published_figures(engine: Engine, metric: str) -> pl.DataFrame:
    """The figures sources published for `metric` (reported; curated, or from an imported claims file), with the
    source's date."""
    r, run, src = schema.result, schema.run, schema.source
    stmt = (sa.select(r.c.id, r.c.source_id, src.c.date.label("source_date"), r.c.model_id, r.c.accelerator_id,
                      r.c.n_devices, r.c.precision, r.c.workload, r.c.value)
            .select_from(r.outerjoin(run, r.c.run_id == run.c.id).outerjoin(src, r.c.source_id == src.c.id))
            .where(r.c.metric == metric, r.c.evidence == "reported",
                   sa.or_(r.c.run_id.is_(None), run.c.format == LogFormat.CLAIMS_CSV.value))
            .order_by(r.c.id))
    return query(engine, stmt)


def runs_to_check(engine: Engine, target: str) -> list[int]:
    """The runs a check names: a run id (a stored run), or `campaign:ID` (its stored runs); InvalidInput saying what
    was looked for otherwise."""
    kind, _, number = target.strip().rpartition(":")
    if kind not in ("", "campaign") or not number.isdigit():
        raise InvalidInput(f"{target!r} is neither a run id (a whole number, as `python -m ingest --json` prints) "
                           "nor campaign:ID")
    if kind == "campaign":
        run_ids = campaign_run_ids(engine, int(number))
        if not run_ids:
            raise InvalidInput(f"there is no campaign {number} with stored runs in the store")
        return run_ids
    run_id = int(number)
    with connection(engine, write=False) as conn:
        found = conn.scalar(sa.select(schema.run.c.id).where(schema.run.c.id == run_id))
    if found is None:
        raise InvalidInput(f"there is no run {run_id} in the store")
    return [run_id]
