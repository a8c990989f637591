"""Stores made by an earlier release brought up to this schema in place, at the first write of a process.

Steps and step counts were 32-bit (INTEGER) until 64-bit steps: such a store reads as before, and its first
writer widens the columns in WIDENED to BIGINT before anything else, so a step of 2**31 or more stores. The rows
are kept; the change is one ALTER per column (PostgreSQL rewrites the table once, DuckDB converts the column).
DuckDB refuses to change the type of a column an index covers, and stores made before the step index became
PostgreSQL's alone still carry it (see schema.step): on DuckDB that index is dropped first, in its own
transaction (DuckDB checks the dependency against committed state), which loses nothing DuckDB reads by.

Campaigns and corrections (schema.LATER_TABLES) came later than runs: a store without them gets them at its first
write, empty, its other tables untouched (add_campaign_tables).

Columns added since (ADDED) are added by the same first writer, one ALTER TABLE ... ADD COLUMN each: a metadata
change on both engines; the rows stored before read the new column as null ("not stated").
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema

WIDENED: tuple[tuple[sa.Table, str], ...] = ((schema.step, "step"), (schema.run, "n_steps"),
                                             (schema.run, "skipped_lines"))
_OLD_STEP_INDEX = "ix_step_run"


def narrow_columns(conn: Connection) -> list[tuple[str, str]]:
    """The (table, column) pairs of WIDENED that the store holds as a type narrower than BIGINT."""
    tables = sorted({t.name for t, _ in WIDENED})
    rows = conn.execute(sa.text(
        "SELECT table_name, column_name, lower(data_type) FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name IN :tables"
    ).bindparams(sa.bindparam("tables", expanding=True)), {"tables": tables}).all()
    kinds = {(str(t), str(c)): str(k) for t, c, k in rows}
    return [(t.name, c) for t, c in WIDENED if kinds.get((t.name, c), "bigint") not in ("bigint", "int8")]


def widen_columns(conn: Connection) -> list[str]:
    """Widen the narrow columns to BIGINT, each step in its own transaction on `conn` (which must not be in one);
    what was widened, as "table.column"."""
    with conn.begin():
        narrow = narrow_columns(conn)
    if not narrow:
        return []
    if conn.dialect.name == "duckdb" and ("step", "step") in narrow:
        with conn.begin():
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {_OLD_STEP_INDEX}")
    with conn.begin():
        for table, column in narrow:
            conn.exec_driver_sql(f'ALTER TABLE {table} ALTER COLUMN "{column}" TYPE BIGINT')
    return [f"{t}.{c}" for t, c in narrow]


def add_campaign_tables(conn: Connection) -> list[str]:
    """Create the tables a store of an earlier release lacks (campaigns, corrections; one that has runs), in a
    transaction of its own on `conn`; the tables created. A store with no tables at all is left to `create_schema`."""
    with conn.begin():
        inspector = sa.inspect(conn)
        if not inspector.has_table(schema.run.name):
            return []
        missing = [t for t in schema.LATER_TABLES if not inspector.has_table(t.name)]
        if missing:
            schema.metadata.create_all(conn, tables=missing)
    return [t.name for t in missing]


def pending(conn: Connection) -> bool:
    """Whether a store of an earlier release lacks what `upgrade` brings (False for a store with no runs table:
    `create_schema` makes it whole)."""
    inspector = sa.inspect(conn)
    if not inspector.has_table(schema.run.name):
        return False
    lacks = any(c not in {col["name"] for col in inspector.get_columns(t.name)} for t, c in ADDED
                if inspector.has_table(t.name))
    return bool(lacks or narrow_columns(conn) or held_not_null(conn)
                or any(not inspector.has_table(t.name) for t in schema.LATER_TABLES))


def upgrade(conn: Connection) -> list[str]:
    """Bring a store of an earlier release up to this schema in place (`conn` not in a transaction): the columns
    widened and added, as "table.column"."""
    return widen_columns(conn) + add_columns(conn) + add_campaign_tables(conn) + _relaxed(conn)


# --- run date: the run's own date (schema.run.ran_at) ---
ADDED: tuple[tuple[sa.Table, str], ...] = ((schema.run, "ran_at"), (schema.result, "printed"),
                                          (schema.result, "unread"), (schema.model, "shape_detail"),
                                          (schema.accelerator, "colour"))


def add_columns(conn: Connection) -> list[str]:
    """ALTER TABLE ... ADD COLUMN for each ADDED column the store lacks, in one transaction; what was added."""
    with conn.begin():
        inspector = sa.inspect(conn)
        missing = [(t, c) for t, c in ADDED if inspector.has_table(t.name)
                   and c not in {col["name"] for col in inspector.get_columns(t.name)}]
        for table, name in missing:
            kind = table.c[name].type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f'ALTER TABLE {table.name} ADD COLUMN "{name}" {kind}')
    return [f"{t.name}.{c}" for t, c in missing]


_DATED: set[str] = set()  # stores seen holding run.ran_at (a column, once added, stays)


def run_date(conn: Connection) -> sa.ColumnElement[Any]:
    """run.ran_at to select, or a typed null labelled so on a store made before it and not written to since (a
    read-only server's, say), which then reads as holding no log dates."""
    url = conn.engine.url.render_as_string(hide_password=False)
    if url not in _DATED:
        found = conn.execute(sa.text(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'run' AND column_name = 'ran_at'")).scalar()
        if not found:
            return sa.cast(sa.null(), schema.run.c.ran_at.type).label("ran_at")
        _DATED.add(url)
    return schema.run.c.ran_at
# --- end run date ---


# --- relaxed columns: NOT NULL in stores made before they could be null ---
RELAXED: tuple[tuple[sa.Table, str], ...] = ((schema.result, "value"),)  # a claims cell kept as printed, not a number


def held_not_null(conn: Connection) -> list[tuple[sa.Table, str]]:
    """The RELAXED columns a store made before still holds NOT NULL."""
    inspector = sa.inspect(conn)
    return [(table, name) for table, name in RELAXED if inspector.has_table(table.name)
            and any(c["name"] == name and not c["nullable"] for c in inspector.get_columns(table.name))]


def relax_columns(conn: Connection) -> list[str]:
    """ALTER TABLE ... DROP NOT NULL for each RELAXED column a store made before still holds NOT NULL (a metadata
    change on both engines; the rows stay), in the caller's transaction; what was relaxed. On DuckDB a table with
    indexes refuses it inside one transaction: there the first writer's `_relaxed` has done it already."""
    held = held_not_null(conn)
    for table, name in held:
        conn.exec_driver_sql(f'ALTER TABLE {table.name} ALTER COLUMN "{name}" DROP NOT NULL')
    return [f"{t.name}.{c}" for t, c in held]


def _relaxed(conn: Connection) -> list[str]:
    """relax_columns at the first write. DuckDB refuses to alter a table an index depends on, checking committed
    state, and aborts when the indexes are dropped and made again in the alter's transaction: so there the table's
    indexes are dropped, the column relaxed and the indexes made again, each in its own transaction (an index is
    derived from the rows: an interruption between them costs read speed, never a row)."""
    with conn.begin():
        held = held_not_null(conn)
    if not held:
        return []
    indexes = [ix for table in {t for t, _ in held} for ix in table.indexes] if conn.dialect.name == "duckdb" else []
    if indexes:
        with conn.begin():
            for index in indexes:
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
    with conn.begin():
        relaxed = relax_columns(conn)
    with conn.begin():
        for index in indexes:
            index.create(conn, checkfirst=True)
    return relaxed
# --- end relaxed columns ---
