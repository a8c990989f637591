"""The resolve queue: every printed cell the vocabulary could not read yet, and every printed name no catalog row
claims, each once with the stored rows that print it; and an answer applied to all of them at once.

`to_resolve` lists them (the Audit page's section, `python -m perfledger resolve list`). `apply_answer` re-reads
every stored claims row that prints the cell (perfledger.claim_cells.read_cells, as the next import of its file
would, the answer included) in one transaction: its metric, value, unit, precision, workload and evidence, what is
still unread, and its claim key; a source kind answer also sets its sources' kind. A name is linked to the catalog
for every source (store.link_name, which makes the name an alias for future imports).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.claim_cells import UNREAD_REASONS, Cells, read_cells
from perfledger.records import ResultRecord
from perfledger.resolutions import FIELDS, Answers, cell_key
from perfledger.store.catalog_table import link_name, unlinked_names
from perfledger.store.claims import claim_key
from perfledger.store.engine import connection

QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "field": pl.String(), "printed": pl.String(), "rows": pl.Int64(), "sources": pl.String(),
    "reason": pl.String(), "suggestion": pl.String(), "command": pl.String(),
}
NAME_FIELDS = ("model", "accelerator")


def resolve_command(field: str, printed: str, answer: str = "ANSWER") -> str:
    """The command that answers a cell (or links a name) for every stored row and future import."""
    return f"python -m perfledger resolve set {field} {shlex.quote(printed)} {answer}"


def to_resolve(engine: Engine) -> pl.DataFrame:
    """One row per unread cell (field, as printed) and per unlinked name: how many stored rows print it, of which
    sources, why, a suggestion where there is one, and the command that answers it; most rows first."""
    with connection(engine, write=False) as conn:
        found = conn.execute(sa.select(schema.result.c.source_id, schema.result.c.unread)
                             .where(schema.result.c.unread.is_not(None))).all()
    cells: dict[tuple[str, str], tuple[str, int, set[str]]] = {}
    for source_id, unread in found:
        for field, printed in json.loads(unread).items():
            key = (field, cell_key(str(printed)))
            shown, n, sources = cells.get(key, (str(printed), 0, set()))
            cells[key] = (shown, n + 1, sources | {str(source_id)})
    rows = [{"field": field, "printed": shown, "rows": n, "sources": ", ".join(sorted(sources)),
             "reason": UNREAD_REASONS.get(field, field) + ("" if field in FIELDS else ": kept as printed, not a figure"),
             "suggestion": None, "command": resolve_command(field, shown) if field in FIELDS else None}
            for (field, _), (shown, n, sources) in cells.items()]
    names = unlinked_names(engine)
    rows += [{"field": r["kind"], "printed": r["printed_name"], "rows": r["rows"], "sources": None,
              "reason": f"{r['kind']} not in the catalog", "suggestion": (r["nearest"] or "").split(", ")[0] or None,
              "command": resolve_command(r["kind"], r["printed_name"], (r["nearest"] or "ID").split(", ")[0])}
             for r in names.iter_rows(named=True)]
    frame = pl.DataFrame(rows, schema=QUEUE_SCHEMA)
    return frame.sort(["rows", "field", "printed"], descending=[True, False, False])


def apply_answer(engine: Engine, field: str, printed: str, answers: Answers) -> int:
    """Re-read every stored row that prints `printed` unread in `field` (a name: link it), with `answers` (the
    saved answer among them), in one transaction; how many rows changed."""
    if field in NAME_FIELDS:
        target = answers.get(field, printed)
        if target is None:
            return 0
        return link_name(engine, field, printed, target, all_sources=True).rows
    key = cell_key(printed)
    with connection(engine, write=True) as conn:
        stored = conn.execute(sa.select(schema.result).where(schema.result.c.unread.is_not(None))).mappings().all()
        matching = [dict(r) for r in stored if cell_key(str(json.loads(r["unread"]).get(field, "\0"))) == key]
        for row in matching:
            _reread(conn, row, answers)
        if field == "source_kind" and (kind := answers.get(field, printed)) is not None:
            sources = {r["source_id"] for r in matching}
            conn.execute(sa.update(schema.source).where(schema.source.c.id.in_(sources)).values(kind=kind))
    return len(matching)


_RECORD_FIELDS = frozenset(f.name for f in fields(ResultRecord))


def _reread(conn: Connection, row: Mapping[str, Any], answers: Answers) -> None:
    """One stored row read again from its printed cells; its key follows what it now reads (keyed by its value too
    when another row holds that key, as both ends of a printed range do; never dropped)."""
    reading = read_cells(Cells.from_json(row["printed"]), answers)
    record = ResultRecord(**{k: v for k, v in row.items() if k in _RECORD_FIELDS})
    record = replace(record, metric=reading.metric, value=reading.value, unit=reading.unit,
                     precision=reading.precision if record.precision_as_printed else record.precision,
                     workload=reading.workload if reading.workload is not None else record.workload,
                     evidence=reading.evidence, unread=reading.unread_json())
    result = schema.result
    key = next((k for k in (claim_key(record), claim_key(record, with_value=True))
                if k == row["row_key"] or conn.scalar(sa.select(result.c.id).where(result.c.row_key == k)) is None),
               row["row_key"])
    changes = {"metric": record.metric, "value": record.value, "unit": record.unit, "precision": record.precision,
               "workload": record.workload, "evidence": record.evidence, "unread": record.unread, "row_key": key}
    conn.execute(sa.update(result).where(result.c.id == row["id"]).values(changes))
