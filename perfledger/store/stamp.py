"""The store's write stamp: a random value every write transaction sets anew.

An answer computed from the store stands for as long as its stamp (perfledger.views.remembered.until_written):
every write goes through `store.engine.connection`, which stamps it inside the write's own transaction, so a
write by any process, on DuckDB or PostgreSQL, is seen by the next read. A stamp is never set twice, so a store
rebuilt, copied or restored from a backup reads as what it is: a backup's stamp is the stamp of its content.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema

TABLE = schema.store_stamp


def stamp_write(conn: Connection) -> None:
    """Set a new stamp, inside the writing transaction. A store made before the table has no stamp until
    `create_schema` adds it; a write that dropped the table (a rebuild) has none to set."""
    if not sa.inspect(conn).has_table(TABLE.name):
        return
    stamp = uuid.uuid4().hex
    if conn.scalar(sa.select(sa.func.count()).select_from(TABLE)):
        conn.execute(TABLE.update().values(stamp=stamp))
    else:
        conn.execute(TABLE.insert().values(stamp=stamp))


def read_stamp(conn: Connection, *, table_known: bool = False) -> str | None:
    """The store's stamp, or None for a store without one yet. With `table_known` the table is not looked for
    first (a catalog query, as long as the select itself on DuckDB); a missing table then raises."""
    if not table_known and not sa.inspect(conn).has_table(TABLE.name):
        return None
    stamp = conn.scalar(sa.select(TABLE.c.stamp).order_by(TABLE.c.stamp).limit(1))
    return None if stamp is None else str(stamp)
