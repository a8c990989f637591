"""PostgreSQL reads of numeric columns through `COPY (SELECT ...) TO STDOUT`: the server's CSV parsed by Polars,
with no Python object per value. psycopg builds one per value (a run's 10,000 steps of 17 columns are 170,000),
which made a run's step table on PostgreSQL as slow as all of its page's other reads together; DuckDB hands over
Arrow and needs none of this."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection

NUMERIC = (pl.Int64, pl.Float64)


def copyable(conn: Connection, target: Mapping[str, pl.DataType]) -> bool:
    """Whether a select with these columns is read through COPY: on PostgreSQL, when every column is a number (CSV
    text then reads back exactly: the server writes each float's shortest exact form; NaN and Infinity included)."""
    return conn.dialect.name == "postgresql" and all(isinstance(t, NUMERIC) for t in target.values())


def literal_sql(conn: Connection, stmt: sa.Select[Any]) -> str | None:
    """The select with its parameters written in as literals (COPY takes none); None when one has no literal form."""
    try:
        return str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    except sa.exc.CompileError:
        return None


def copied_rows(conn: Connection, sql: str) -> Iterator[bytes]:
    """The rows of the select `sql` as COPY's CSV lines, one a row."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)") as copy:
        for row in copy:
            yield bytes(row)


def frame_of(rows: list[bytes], target: Mapping[str, pl.DataType]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=dict(target))
    return pl.read_csv(b"".join(rows), has_header=False, new_columns=list(target), schema=dict(target))


def copied_frame(conn: Connection, sql: str, target: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return frame_of(list(copied_rows(conn, sql)), target)


def copied_batches(conn: Connection, sql: str, target: Mapping[str, pl.DataType],
                   batch_rows: int) -> Iterator[pl.DataFrame]:
    """The select's rows as frames of at most `batch_rows` rows each, read as the server sends them."""
    batch: list[bytes] = []
    for row in copied_rows(conn, sql):
        batch.append(row)
        if len(batch) >= batch_rows:
            yield frame_of(batch, target)
            batch = []
    if batch:
        yield frame_of(batch, target)
