"""A stored run after the fact: columns added to stores made before them, and hints that update a run's
configuration and figures from its stored steps (no parse)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema

# Columns added to a table after stores were made with it: (table, column). Adding one is a metadata change in
# both DuckDB and PostgreSQL; rows stored before read it as null, which every reader takes as "not stated".
ADDED_COLUMNS: tuple[tuple[sa.Table, str], ...] = ((schema.step, "launch"),)


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
    return added
