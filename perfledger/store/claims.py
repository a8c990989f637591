"""Claims imported from a CSV: one row per claim key, corrections update it, curated sources stay closed.

A claim's key is what names the figure, not the figure: (source, locator, metric, model, accelerator, devices,
precision, sequence length, global batch, workload, strategy). Importing a row whose key is stored updates that
row (a correction) and says so; the same row again changes nothing. A source loaded from data/sources.csv by
`init` is curated: an import cannot add rows under it; those rows are refused one by one. A source an import
creates keeps the kind the file stated (else "upload" or "cli", the way it came), and its evidence says it was
imported ("imported via cli"), with the name the operator gave the token that unlocked writing where one is set
(PERFLEDGER_UPLOAD_TOKEN_NAME; never the token, nor a hash of it): that evidence, not the kind, tells it from a
curated one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.catalog.link import UnlinkedName, link_record, unlinked_in
from perfledger.errors import InvalidInput
from perfledger.records import ResultRecord
from perfledger.settings import load_settings
from perfledger.store.catalog_table import catalog_from
from perfledger.store.engine import connection
from perfledger.vocabulary import SourceKind

CLAIM_KEY_FIELDS = ("source_id", "locator", "metric", "model_as_printed", "accelerator_as_printed", "n_devices",
                    "precision", "seq_len", "global_batch", "workload", "strategy")
IMPORTED_KINDS = frozenset({SourceKind.UPLOAD.value, SourceKind.CLI.value})
_COMPARED = ("value", "unit", "evidence", "note", "framework", "framework_version", "micro_batch", "baseline",
             "model_id", "accelerator_id", "grad_accum", "tp", "pp", "dp", "ep", "cp", "sparsity",
             "precision_as_printed", "printed", "unread")


@dataclass(frozen=True, slots=True)
class ClaimsWrite:
    """What an import did: rows added, updated (same key, new figures), unchanged, those refused, each as
    (index of the row among the file's claims, sentence), and the printed names its stored rows leave unlinked."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: tuple[tuple[int, str], ...] = ()
    unlinked: tuple[UnlinkedName, ...] = ()

    def describe(self) -> str:
        """ "3 added, 2 updated, 0 unchanged" (and "; 1 refused" when some were)."""
        text = f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged"
        return text + (f"; {len(self.refused)} refused" if self.refused else "")


def claim_key(record: ResultRecord, *, with_value: bool = False) -> str:
    """SHA-256 of the claim's key fields: the same figure from the same place, whatever its value. Its further
    configuration (attributes) is part of the key when it has any; `with_value` keys one end of a printed range
    (several values under one key in one file) by its value too."""
    row = asdict(record)
    fields = [row[f] for f in CLAIM_KEY_FIELDS]
    if record.attributes:
        fields.append(record.attributes)
    if record.unread:  # a row with a cell unread yet is told apart by all it printed (two in one row, say)
        fields += ["printed", record.printed]
    if with_value:
        fields += ["range", record.value]
    payload = json.dumps(["claim", *fields], default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def claim_keys(records: Sequence[ResultRecord]) -> list[str]:
    """Each record's key; records sharing a key with different values in one file (a printed range, "33% to
    39%") are all kept, each keyed by its value as well, so none overwrites another and a re-import matches."""
    plain = [claim_key(r) for r in records]
    values: dict[str, set[float | None]] = {}
    for key, record in zip(plain, records, strict=True):
        values.setdefault(key, set()).add(record.value)
    return [claim_key(r, with_value=True) if len(values[k]) > 1 else k for k, r in zip(plain, records, strict=True)]


def token_credit(token: str | None) -> str:
    """How an import's evidence names the upload token that unlocked it: by the name the operator gave it
    (PERFLEDGER_UPLOAD_TOKEN_NAME), never by the token or a hash of it (12 hex digits of its unsalted SHA-256,
    shown on the Sources page, gave a weak token away to a dictionary at once)."""
    if not token:
        return " (no token set)"
    name = load_settings().upload_token_name
    return f" with token {name}" if name else " with the upload token"


def imported_source(source: Mapping[str, Any], importer: str, token: str | None) -> dict[str, Any]:
    """The `source` row an import creates: the kind the file stated (a `docs` page stays `docs`), else the
    importer's (upload or cli); its evidence says it was imported, and by which way."""
    how = importer if importer in IMPORTED_KINDS else SourceKind.CLI.value
    kind = source.get("kind") if source.get("kind") in {k.value for k in SourceKind} else how
    by = f"imported via {how}{token_credit(token)}"
    return {"id": source["id"], "kind": kind, "title": source.get("title") or source["id"],
            "publisher": source.get("publisher"), "date": source.get("date") or None, "url": source.get("url") or None,
            "evidence": by, "note": source.get("note") or None}


@dataclass(frozen=True, slots=True)
class ClaimsPlan:
    """What storing a claims file would do, read from the store and writing nothing: the sources to create, the
    rows to add and to update, how many are unchanged, and the refusals and unlinked names to report."""

    sources: tuple[dict[str, Any], ...]
    added: tuple[dict[str, Any], ...]
    changed: tuple[dict[str, Any], ...]
    unchanged: int
    refused: tuple[tuple[int, str], ...]
    unlinked: tuple[UnlinkedName, ...]

    def outcome(self) -> ClaimsWrite:
        return ClaimsWrite(len(self.added), len(self.changed), self.unchanged, self.refused, self.unlinked)


def plan_claims(conn: Connection, records: Sequence[ResultRecord], sources: Sequence[Mapping[str, Any]], *,
                run_id: int | None, importer: str, token: str | None = None) -> ClaimsPlan:
    """What `upsert_claims` would store, read through `conn` without writing (a dry run shows it)."""
    source = schema.source
    stored_sources = {sid: (kind, evidence) for sid, kind, evidence in
                      conn.execute(sa.select(source.c.id, source.c.kind, source.c.evidence))}
    curated = {sid for sid, (kind, evidence) in stored_sources.items() if not is_imported(kind, evidence)}
    why = ("is curated (loaded from data/sources.csv): an import cannot add figures under it; give the row a "
           "source of its own")
    refused = tuple((i, f"source {r.source_id!r} {why}") for i, r in enumerate(records) if r.source_id in curated)
    keep = [r for r in records if r.source_id not in curated]
    cited = {r.source_id for r in keep}
    fresh = tuple(imported_source(s, importer, token) for s in sources
                  if s["id"] in cited and s["id"] not in stored_sources)
    known = catalog_from(conn)
    linked = [link_record(replace(record, run_id=run_id), known) for record in keep]
    keys = claim_keys(keep)
    rows = {key: asdict(r) | {"row_key": key} for key, r in zip(keys, linked, strict=True)}
    stored = _stored(conn, list(rows))
    rows = {key: _keep_links(row, stored.get(key)) for key, row in rows.items()}
    added = tuple(row for key, row in rows.items() if key not in stored)
    changed = tuple(row for key, row in rows.items() if key in stored and _differs(row, stored[key]))
    final = [replace(r, model_id=rows[k]["model_id"], accelerator_id=rows[k]["accelerator_id"])
             for k, r in zip(keys, linked, strict=True)]
    return ClaimsPlan(fresh, added, changed, len(rows) - len(added) - len(changed), refused,
                      unlinked_in(final, known))


def upsert_claims(conn: Connection, records: Sequence[ResultRecord], sources: Sequence[Mapping[str, Any]], *,
                  run_id: int | None, importer: str, token: str | None = None) -> ClaimsWrite:
    """Store claims by key inside the caller's transaction: new keys added, changed ones updated, rows under a
    curated source refused (one sentence each); the sources the rows cite created as imported."""
    plan = plan_claims(conn, records, sources, run_id=run_id, importer=importer, token=token)
    if plan.sources:
        conn.execute(_insert(conn, schema.source), list(plan.sources))
    if plan.added:
        conn.execute(_insert(conn, schema.result), list(plan.added))
    for row in plan.changed:
        values = {k: v for k, v in row.items() if k not in ("row_key", "id")}
        conn.execute(schema.result.update().where(schema.result.c.row_key == row["row_key"]).values(values))
    return plan.outcome()


def _keep_links(row: dict[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """A row the catalog leaves unlinked keeps the link a user made for its stored twin (`catalog link` of one
    source makes no alias), so importing the file again does not undo it."""
    if stored is None:
        return row
    kept = {f"{kind}_id": stored[f"{kind}_id"] for kind in ("model", "accelerator")
            if row[f"{kind}_id"] is None and stored[f"{kind}_id"] is not None
            and row[f"{kind}_as_printed"] == stored[f"{kind}_as_printed"]}
    return row | kept


def is_imported(kind: str | None, evidence: str | None) -> bool:
    """A source an import created (its kind upload or cli, or its evidence saying it was imported), as opposed to
    one loaded from data/sources.csv."""
    return kind in IMPORTED_KINDS or (evidence or "").startswith("imported via")


def _insert(conn: Connection, table: sa.Table) -> sa.Insert:
    """An INSERT that, on PostgreSQL, skips a row another writer committed since we looked (same key); DuckDB
    has one writer at a time."""
    if conn.dialect.name == "postgresql":
        # PostgreSQL's dialect (~100 ms) loads only on a PostgreSQL store, never on the default DuckDB one
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    return sa.insert(table)


def _stored(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    table = schema.result
    for start in range(0, len(keys), 1000):
        chunk = keys[start:start + 1000]
        for row in conn.execute(sa.select(table).where(table.c.row_key.in_(chunk))).mappings():
            out[row["row_key"]] = dict(row)
    return out


def _differs(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return any(new.get(k) != old.get(k) for k in _COMPARED)


def delete_source(engine: Engine, source_id: str) -> int:
    """Remove an imported source and every result under it, in one transaction; how many results went.
    A curated source is refused (it comes back with the next `init`)."""
    with connection(engine, write=True) as conn:
        found = conn.execute(sa.select(schema.source.c.kind, schema.source.c.evidence)
                             .where(schema.source.c.id == source_id)).first()
        if found is None:
            raise InvalidInput(f"no source {source_id!r} in the store")
        kind, evidence = found
        if not is_imported(kind, evidence):
            raise InvalidInput(f"source {source_id!r} is curated (kind {kind}, from data/sources.csv); only "
                               "imported sources can be deleted")
        gone = conn.execute(sa.delete(schema.result).where(schema.result.c.source_id == source_id)).rowcount
        conn.execute(sa.delete(schema.source).where(schema.source.c.id == source_id))
    return int(gone or 0)
