"""Writes, each in one transaction: a prepared run with its steps and results, standalone results, a deletion."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from perfledger import schema
from perfledger.catalog.link import UnlinkedName, link_record
from perfledger.catalog.record import Catalog
from perfledger.errors import StoreError
from perfledger.records import LATE_RESULT_FIELDS, STEP_SCHEMA, PreparedRun, ResultRecord, SaveResult
from perfledger.store.bulk import insert_parquet, insert_step_files
from perfledger.store.catalog_table import catalog_from
from perfledger.store.claims import ClaimsWrite, plan_claims, upsert_claims
from perfledger.store.engine import connection
from perfledger.store.lake import lake_of
from perfledger.store.lake_steps import delete_run_steps
from perfledger.store.read import find_run
from perfledger.vocabulary import LogFormat

STEP_COLUMNS = tuple(STEP_SCHEMA)


def save_run(engine: Engine, prepared: PreparedRun, *, ingested_at: datetime | None = None,
             importer: str = "cli", token: str | None = None) -> SaveResult:
    """Store a prepared run, its steps and its results in one transaction; the same bytes again are a no-op.

    Nothing is parsed or computed here: the steps are read from the run's Parquet spool (DuckDB inserts from it,
    PostgreSQL COPYs from it). A run whose content hash is already stored is returned as it is; a writer that
    stores the same bytes first wins the race, and its run is returned. Any exception rolls everything back.
    """
    try:
        with connection(engine, write=True) as conn:
            existing = _run_id(conn, prepared.content_sha256)
            if existing is not None:
                return SaveResult(existing, created=False, imported=_unchanged(prepared),
                                  unlinked=_still_unlinked(conn, prepared))
            if prepared.format is LogFormat.CLAIMS_CSV:  # by claim key: corrections update (store/claims.py)
                run_id = _insert_run_and_steps(conn, prepared, ingested_at or datetime.now(UTC))
                written = upsert_claims(conn, prepared.results, prepared.sources, run_id=run_id,
                                        importer=importer, token=token)
                return SaveResult(run_id, created=True, imported=written.describe(),
                                  refused=claims_refusals(prepared, written), unlinked=written.unlinked)
            run_id = store_log_run(conn, prepared, ingested_at or datetime.now(UTC))
    except StoreError as exc:
        if isinstance(exc.__cause__, IntegrityError):  # a racing writer stored the same bytes first
            existing = find_run(engine, prepared.content_sha256)
            if existing is not None:
                return SaveResult(existing, created=False)
        raise
    return SaveResult(run_id, created=True)


def store_log_run(conn: Connection, prepared: PreparedRun, ingested_at: datetime) -> int:
    """A prepared log (not a claims file) written on `conn`, in the caller's transaction: run, steps, results."""
    run_id = _insert_run_and_steps(conn, prepared, ingested_at)
    insert_missing(conn, schema.source, prepared.sources)
    insert_results(conn, [replace(r, run_id=run_id) for r in prepared.results])
    return run_id


def store_log_runs(conn: Connection, prepared: Sequence[PreparedRun], ingested_at: datetime) -> list[int]:
    """Prepared logs (not claims files) written on `conn` in the caller's transaction, in bulk: the runs by
    multi-row INSERTs, every run's steps by one statement, their sources and results once; each run's id, in order.
    A run whose bytes are stored already (or come twice) is that run: its steps and results are not written again.
    One run at a time, a campaign of ten result files read the catalog ten times and made 60 statements."""
    ids = stored_run_ids(conn, [p.content_sha256 for p in prepared])
    fresh = list({p.content_sha256: p for p in prepared if p.content_sha256 not in ids}.values())
    for start in range(0, len(fresh), RUN_BATCH):
        batch = fresh[start:start + RUN_BATCH]
        stmt = (sa.insert(schema.run).values([_run_values(p, ingested_at) for p in batch])
                .returning(schema.run.c.id, schema.run.c.content_sha256))
        ids.update({str(sha): int(run_id) for run_id, sha in conn.execute(stmt)})
    insert_step_files(conn, [(ids[p.content_sha256], p.steps) for p in fresh])
    insert_missing(conn, schema.source, list({s["id"]: s for p in fresh for s in p.sources}.values()))
    insert_results(conn, [replace(r, run_id=ids[p.content_sha256]) for p in fresh for r in p.results])
    return [ids[p.content_sha256] for p in prepared]


RUN_BATCH = 200  # runs per INSERT: 11 values each, far under either engine's limit on bound parameters


def stored_run_ids(conn: Connection, shas: Sequence[str]) -> dict[str, int]:
    """The runs stored with these content hashes, by hash, looked up by the unique index in batches."""
    found: dict[str, int] = {}
    for start in range(0, len(shas), ROW_KEY_BATCH):
        stmt = sa.select(schema.run.c.content_sha256, schema.run.c.id).where(
            schema.run.c.content_sha256.in_(list(shas[start:start + ROW_KEY_BATCH])))
        found.update({str(sha): int(run_id) for sha, run_id in conn.execute(stmt)})
    return found


def _insert_run_and_steps(conn: Connection, prepared: PreparedRun, ingested_at: datetime) -> int:
    run_id = _insert_run(conn, prepared, ingested_at)
    steps = prepared.steps
    if lake_of(conn.engine) is not None:
        insert_step_files(conn, [(run_id, steps)])
    else:
        insert_parquet(conn, schema.step, steps.files, STEP_COLUMNS, order_shows=not steps.increasing,
                       constants={"run_id": run_id})
    return run_id


def _unchanged(prepared: PreparedRun) -> str | None:
    return f"0 added, 0 updated, {len(prepared.results)} unchanged" if prepared.format is LogFormat.CLAIMS_CSV else None


def _still_unlinked(conn: Connection, prepared: PreparedRun) -> tuple[UnlinkedName, ...]:
    """A claims file stored before: the printed names its rows still leave unlinked (the catalog may have grown,
    or a name been linked for its source)."""
    if prepared.format is not LogFormat.CLAIMS_CSV:
        return ()
    return plan_claims(conn, prepared.results, prepared.sources, run_id=None, importer="cli").unlinked


def plan_run(engine: Engine, prepared: PreparedRun, *, importer: str = "cli") -> tuple[int | None, ClaimsWrite]:
    """What `save_run` would do with a prepared claims file, writing nothing (a dry run): the run already holding
    these bytes, if any, and the rows it would add, update, leave unchanged, refuse and leave unlinked."""
    with connection(engine, write=False) as conn:
        existing = _run_id(conn, prepared.content_sha256)
        plan = plan_claims(conn, prepared.results, prepared.sources, run_id=None, importer=importer)
    if existing is not None:
        return existing, ClaimsWrite(unchanged=len(prepared.results), unlinked=plan.unlinked)
    return None, plan.outcome()


def claims_refusals(prepared: PreparedRun, written: ClaimsWrite) -> tuple[str, ...]:
    """Each row the store refused (or would refuse), as "FILE:LINE: reason"."""
    lines = (prepared.config.get("format_meta") or {}).get("lines") or []
    return tuple(f"{prepared.file_name}:{lines[i] if i < len(lines) else '?'}: {why}" for i, why in written.refused)


def _run_id(conn: Connection, content_sha256: str) -> int | None:
    return conn.scalar(sa.select(schema.run.c.id).where(schema.run.c.content_sha256 == content_sha256))


def _insert_run(conn: Connection, prepared: PreparedRun, ingested_at: datetime) -> int:
    values = _run_values(prepared, ingested_at)
    return int(conn.execute(sa.insert(schema.run).values(**values).returning(schema.run.c.id)).scalar_one())


def _run_values(prepared: PreparedRun, ingested_at: datetime) -> dict[str, Any]:
    return {
        "content_sha256": prepared.content_sha256,
        "format": prepared.format.value,
        "file_name": prepared.file_name,
        "file_bytes": prepared.file_bytes,
        "ingested_at": ingested_at,
        "config": _json(prepared.config),
        "warnings": _json(list(prepared.warnings)),
        "summary": _json(prepared.summary),
        "n_steps": prepared.steps.rows,
        "skipped_lines": prepared.skipped_lines,
        "ran_at": prepared.ran_at,
    }


def add_results(engine: Engine, records: Sequence[ResultRecord], *, sources: Sequence[Mapping[str, Any]] = ()) -> int:
    """Store standalone results (a claims CSV, say) and any new sources they cite, in one transaction."""
    with connection(engine, write=True) as conn:
        insert_missing(conn, schema.source, sources)
        return insert_results(conn, records)


def delete_run(engine: Engine, run_id: int) -> bool:
    """Remove a run, its steps and the results it produced, in one transaction (a DuckLake store's steps: see
    lake_steps, whose lake commits after the ledger)."""
    lake = lake_of(engine)
    with connection(engine, write=True) as conn:
        conn.execute(sa.delete(schema.result).where(schema.result.c.run_id == run_id))
        if lake is not None:
            delete_run_steps(conn, lake, run_id)
        else:
            conn.execute(sa.delete(schema.step).where(schema.step.c.run_id == run_id))
        conn.execute(sa.update(schema.outcome).where(schema.outcome.c.run_id == run_id).values(run_id=None))
        conn.execute(sa.delete(schema.correction).where(schema.correction.c.run_id == run_id))
        gone = conn.execute(sa.delete(schema.run).where(schema.run.c.id == run_id)).rowcount
    return bool(gone)


def insert_missing(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert the rows whose id the table does not hold yet; how many were new."""
    if not rows:
        return 0
    existing = set(conn.execute(sa.select(table.c.id)).scalars())
    fresh = [dict(r) for r in rows if r["id"] not in existing]
    insert_rows(conn, table, fresh)
    return len(fresh)


ROWS_PER_INSERT = 500  # rows of one multi-row INSERT: 35 values a result row, under PostgreSQL's 65,535 parameters


def insert_rows(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert rows (each with the same keys) by multi-row INSERTs, skipping on PostgreSQL a row another writer
    committed since we looked (`_insert_new`). DuckDB ran an executemany as one INSERT per row: 736 result rows took
    2-3 s, one statement per 500 rows a few milliseconds."""
    columns = list(dict.fromkeys(k for row in rows for k in row))  # a key some rows lack: null in those
    for start in range(0, len(rows), ROWS_PER_INSERT):
        batch = [{k: row.get(k) for k in columns} for row in rows[start:start + ROWS_PER_INSERT]]
        conn.execute(_insert_new(conn, table).values(batch))


def _insert_new(conn: Connection, table: sa.Table) -> sa.Insert:
    """An INSERT that, on PostgreSQL, skips a row another writer committed since we looked (same key).

    DuckDB has one writer at a time (its file lock), so there the plain INSERT cannot meet such a row.
    """
    if conn.dialect.name == "postgresql":
        # PostgreSQL's dialect (~100 ms) loads only on a PostgreSQL store, never on the default DuckDB one
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    return sa.insert(table)


def result_row_key(record: ResultRecord) -> str:
    """SHA-256 of the record's canonical JSON: the same number from the same place is stored once."""
    row = {k: v for k, v in asdict(record).items() if k not in LATE_RESULT_FIELDS or v is not None}
    payload = json.dumps(row, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _result_row(record: ResultRecord, known: Catalog) -> dict[str, Any]:
    """The row of `record` linked to the store's catalog (an unknown name kept as printed, id empty); its key is
    the record's as given, so the same input is the same row whatever the catalog knew then."""
    row = asdict(link_record(record, known))
    row["row_key"] = result_row_key(record)
    return row


def insert_results(conn: Connection, records: Sequence[ResultRecord]) -> int:
    """Insert the records not stored yet (by row key); how many were new."""
    if not records:
        return 0
    known = catalog_from(conn)
    rows = {r["row_key"]: r for r in (_result_row(record, known) for record in records)}
    existing = stored_row_keys(conn, list(rows))
    fresh = [row for key, row in rows.items() if key not in existing]
    insert_rows(conn, schema.result, fresh)
    return len(fresh)


# --- row keys asked for by the batch, so that a write reads what it adds, not the whole result table ---
ROW_KEY_BATCH = 500  # keys per IN list: far under either engine's limit on bound parameters


def stored_row_keys(conn: Connection, keys: Sequence[str]) -> set[str]:
    """Those of `keys` the result table already holds, looked up by its unique index in batches."""
    found: set[str] = set()
    for start in range(0, len(keys), ROW_KEY_BATCH):
        batch = keys[start:start + ROW_KEY_BATCH]
        found.update(conn.execute(sa.select(schema.result.c.row_key)
                                  .where(schema.result.c.row_key.in_(batch))).scalars())
    return found
# --- end row keys ---


def _json(value: Any) -> str:
    return json.dumps(_finite(value), sort_keys=True, default=_json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    """NaN and infinities become null: JSON has no spelling for them, and PostgreSQL refuses them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return str(value)
