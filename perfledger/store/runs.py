"""A stored run after the fact: columns added to stores made before them, and hints that update a run's
configuration and figures from its stored steps (no parse)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.errors import InvalidInput, StoreError
from perfledger.records import ResultRecord
from perfledger.store.engine import connection
from perfledger.store.upgrade import relax_columns
from perfledger.store.write import _json as json_text
from perfledger.store.write import insert_results

# Columns added to a table after stores were made with it: (table, column). Adding one is a metadata change in
# both DuckDB and PostgreSQL; rows stored before read it as null, which every reader takes as "not stated".
ADDED_COLUMNS: tuple[tuple[sa.Table, str], ...] = ((schema.step, "launch"), (schema.step, "generation_s"),
                                                   (schema.step, "training_s"), (schema.step, "clock_s"),
                                                   (schema.result, "precision_as_printed"),
                                                   (schema.result, "attributes"), (schema.model, "head_dim"),
                                                   (schema.result, "printed"), (schema.result, "unread"),
                                                   (schema.model, "shape_detail"))


def add_missing_columns(conn: Connection) -> list[str]:
    """ALTER TABLE ... ADD COLUMN for each ADDED_COLUMNS entry a store made before it lacks; what was added."""
    inspector = sa.inspect(conn)
    added = []
    for table, name in ADDED_COLUMNS:
        if not inspector.has_table(table.name):
            continue
        if name in {c["name"] for c in inspector.get_columns(table.name)}:
            continue
        column = table.c[name]
        kind = column.type.compile(dialect=conn.dialect)
        conn.execute(sa.text(f'ALTER TABLE {table.name} ADD COLUMN "{name}" {kind}'))
        added.append(f"{table.name}.{name}")
    return added + relax_columns(conn)


STEADY_LOCATOR = "steady-state window"  # the locator of the result rows a run's summary produced


def restate_run(engine: Engine, run_id: int, *, config: Mapping[str, Any], summary: Mapping[str, Any],
                warnings: Sequence[str], results: Sequence[ResultRecord]) -> None:
    """Replace a stored run's configuration, summary, warnings and steady-state result rows, in one transaction
    (its steps and the results the file itself stated are kept)."""
    r, res = schema.run, schema.result
    with connection(engine, write=True) as conn:
        if conn.scalar(sa.select(r.c.id).where(r.c.id == run_id)) is None:
            raise InvalidInput(f"there is no run {run_id} to update")
        conn.execute(sa.update(r).where(r.c.id == run_id).values(
            config=json_text(config), summary=json_text(summary), warnings=json_text(list(warnings))))
        conn.execute(sa.delete(res).where((res.c.run_id == run_id) & (res.c.locator == STEADY_LOCATOR)))
        insert_results(conn, [replace(x, run_id=run_id) for x in results])


def catalog_is_empty(engine: Engine) -> bool:
    """True when the store holds no model and no accelerator row (never initialised with perfledger init)."""
    m, a = schema.model, schema.accelerator
    try:
        with connection(engine, write=False) as conn:
            return not conn.scalar(sa.select(sa.or_(sa.exists(sa.select(m.c.id)), sa.exists(sa.select(a.c.id)))))
    except StoreError:
        return True
