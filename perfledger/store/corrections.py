"""A run's identity corrected in place: its configuration, summary and every result row it produced rewritten,
and the correction kept with its time and reason, in one transaction (perfledger.corrections)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.corrections import Change, provenance
from perfledger.errors import InvalidInput
from perfledger.records import ResultRecord
from perfledger.store.engine import connection
from perfledger.store.read import query
from perfledger.store.runs import STEADY_LOCATOR
from perfledger.store.write import _json as json_text
from perfledger.store.write import insert_results

# A corrected field and the result columns that carry it (a name: the catalog id and the name as printed)
RESULT_COLUMNS = {"model": ("model_id", "model_as_printed"), "accelerator": ("accelerator_id", "accelerator_as_printed"),
                  "n_devices": ("n_devices",), "precision": ("precision",), "seq_len": ("seq_len",),
                  "global_batch": ("global_batch",), "micro_batch": ("micro_batch",)}
_RECORD_FIELDS = {f.name for f in fields(ResultRecord)}


def save_correction(engine: Engine, run_id: int, *, config: Mapping[str, Any], summary: Mapping[str, Any],
                    warnings: Sequence[str], steady_results: Sequence[ResultRecord], changed: Sequence[Change],
                    reason: str | None, at: datetime) -> list[int]:
    """Store a correction of run `run_id`: the corrections' rows (their ids returned), the configuration with each
    corrected field's provenance, the summary and warnings, the steady-state results recomputed and every other
    result row of the run carrying the corrected identity."""
    r = schema.run
    with connection(engine, write=True) as conn:
        if conn.scalar(sa.select(r.c.id).where(r.c.id == run_id)) is None:
            raise InvalidInput(f"there is no run {run_id} to correct")
        ids = [_insert(conn, run_id, c, reason, at) for c in changed]
        identity = dict(config.get("identity") or {}) | {c.field: provenance(i, at, reason)
                                                          for i, c in zip(ids, changed, strict=True)}
        conn.execute(sa.update(r).where(r.c.id == run_id).values(
            config=json_text(dict(config) | {"identity": identity}), summary=json_text(summary),
            warnings=json_text(list(warnings))))
        _rewrite_results(conn, run_id, config, steady_results)
    return ids


def _insert(conn: Connection, run_id: int, change: Change, reason: str | None, at: datetime) -> int:
    values = {"run_id": run_id, "field": change.field, "before": json.dumps(change.before),
              "after": json.dumps(change.after), "reason": reason, "corrected_at": at}
    table = schema.correction
    return int(conn.execute(sa.insert(table).values(**values).returning(table.c.id)).scalar_one())


def _rewrite_results(conn: Connection, run_id: int, config: Mapping[str, Any],
                     steady_results: Sequence[ResultRecord]) -> None:
    """The run's result rows with the corrected identity: the steady-state ones as recomputed, the others (the
    figures the log printed) as stored with their identity columns set anew (and so their row keys)."""
    res = schema.result
    kept = conn.execute(sa.select(res).where((res.c.run_id == run_id) & (res.c.locator != STEADY_LOCATOR))).mappings()
    identity = _identity_columns(config)
    others = [replace(ResultRecord(**{k: v for k, v in row.items() if k in _RECORD_FIELDS}), **identity)
              for row in kept]
    conn.execute(sa.delete(res).where(res.c.run_id == run_id))
    insert_results(conn, [*others, *(replace(x, run_id=run_id) for x in steady_results)])


def _identity_columns(config: Mapping[str, Any]) -> dict[str, Any]:
    """The result columns of the corrected identity, as the run's own measured rows carry it (the store links a
    model or accelerator id it knows, and keeps any other name as printed)."""
    return {column: config.get(name if i == 0 else f"{name}_as_printed")
            for name, columns in RESULT_COLUMNS.items() for i, column in enumerate(columns)}


CORRECTIONS_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.Int64(), "run_id": pl.Int64(), "field": pl.String(), "before": pl.String(), "after": pl.String(),
    "reason": pl.String(), "corrected_at": pl.Datetime("us", "UTC")}


def corrections(engine: Engine, run_id: int | None = None) -> pl.DataFrame:
    """The corrections kept (of one run, or every run), oldest first."""
    c = schema.correction
    with connection(engine, write=False) as conn:
        if not sa.inspect(conn).has_table(c.name):
            return pl.DataFrame(schema=CORRECTIONS_SCHEMA)
    stmt = sa.select(c.c.id, c.c.run_id, c.c.field, c.c.before, c.c.after, c.c.reason, c.c.corrected_at).order_by(c.c.id)
    return query(engine, stmt if run_id is None else stmt.where(c.c.run_id == run_id))
