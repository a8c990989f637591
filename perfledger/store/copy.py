"""copy_store: a whole ledger from one store into an empty one (DuckDB, PostgreSQL, a PostgreSQL store whose steps
live in a DuckLake; any direction), ids kept, counts checked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.errors import StoreError
from perfledger.spools import spool_folder, sql_text
from perfledger.store import lake_steps
from perfledger.store.bulk import FrameWriter
from perfledger.store.engine import connection as _connection
from perfledger.store.engine import is_duckdb, mask_url
from perfledger.store.init import create_schema, has_schema
from perfledger.store.lake import lake_of
from perfledger.store.read import cast_to, counts, polars_type
from perfledger.store.upgrade import run_date

COPY_BATCH_ROWS = 50_000
# DuckDB's memory while it reads the source in order: the ORDER BY of 10 M steps held them all (a copy out of a
# 10 M-step store peaked at 1.4 GB); under this limit the sort spills to a spool folder on disk.
COPY_READ_MEMORY = "64MB"


def copy_store(src: Engine, dst: Engine) -> dict[str, int]:
    """Copy every table of the ledger at `src` into the empty store at `dst`, ids kept; rows per table.

    The destination's tables are created when missing and must hold no row. All writes happen in one
    transaction on `dst`: the row counts are checked against the source's before it commits (a mismatch is
    a StoreError and nothing is kept), and the id sequences of `run` and `result` are moved past the copied
    ids, so the next ingest on the destination does not collide with them. A DuckLake store's steps are those
    of the runs its ledger holds (not any left by a writer killed between its two commits, see lake_steps); into
    one, they are written in the lake's transaction, which commits just before the ledger's.
    """
    if not has_schema(src):
        raise StoreError(mask_url(str(src.url)), "it holds no perfledger tables; nothing to copy")
    create_schema(dst)
    held = {t: n for t, n in counts(dst).items() if n}
    if held:
        rows = ", ".join(f"{n} {t}" for t, n in held.items())
        raise StoreError(mask_url(str(dst.url)),
                         f"the destination already holds rows ({rows}); copy into an empty store")
    src_lake, dst_lake = lake_of(src), lake_of(dst)
    with _connection(src, write=False) as read, _connection(dst, write=True) as write, _bounded_reads(read):
        tables = [t for t in schema.TABLES if sa.inspect(read).has_table(t.name)  # a store before campaigns
                  or (t is schema.step and src_lake is not None)]
        run_ids = read.execute(sa.select(schema.run.c.id)).scalars().all() if src_lake is not None else []
        expected = {t.name: lake_steps.count_steps(src_lake, run_ids) if t is schema.step and src_lake is not None
                    else _count(read, t) for t in tables}
        for table in tables:
            with FrameWriter(write, table) as writer:
                if table is schema.step and src_lake is not None:  # the steps of the runs the ledger holds
                    frames = lake_steps.step_batches(src_lake, list(lake_steps.COLUMNS), run_ids=run_ids,
                                                     batch_rows=COPY_BATCH_ROWS)
                    for frame in frames:
                        writer.add(cast_to(frame, {c.name: polars_type(c) for c in table.c}))
                    continue
                stmt = sa.select(*_columns(read, table)).order_by(*_copy_order(table, read))
                for frame in _frames_in_batches(read, stmt):
                    writer.add(frame)
        copied = {t.name: lake_steps.staged(write, dst_lake).count() if t is schema.step and dst_lake is not None
                  else _count(write, t) for t in tables}
        if copied != expected:
            diff = ", ".join(f"{t}: {n} read, {copied[t]} written" for t, n in expected.items() if n != copied[t])
            raise StoreError(mask_url(str(dst.url)), f"row counts differ after the copy ({diff}); nothing was kept")
        for table in (schema.run, schema.result, schema.campaign, schema.outcome):
            _advance_id_sequence(write, table)
    return copied


def _count(conn: Connection, table: sa.Table) -> int:
    return int(conn.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def _columns(conn: Connection, table: sa.Table) -> list[sa.ColumnElement[Any]]:
    """The table's columns as the source store holds them (a run date reads as null where it has none yet)."""
    return [run_date(conn) if table is schema.run and c.name == "ran_at" else c for c in table.c]


def _copy_order(table: sa.Table, conn: Connection) -> list[sa.ColumnElement[Any]]:
    """Rows in key order; a run's repeated steps in the order they were stored (DuckDB's rowid; PostgreSQL reads
    them through the step index, whose equal keys keep the order of the rows in the table)."""
    stored: list[sa.ColumnElement[Any]] = [sa.literal_column("rowid")] if is_duckdb(conn.engine) else []
    return list(table.primary_key.columns) or [table.c.run_id, table.c.step, *stored]


@contextmanager
def _bounded_reads(conn: Connection) -> Iterator[None]:
    """On a DuckDB source: its reads under COPY_READ_MEMORY, one thread, sorts spilled to a spool folder (not
    beside the file: a store on a read-only volume can be copied)."""
    if not is_duckdb(conn.engine):
        yield
        return
    with spool_folder("sort") as folder:
        conn.exec_driver_sql(f"SET temp_directory = {sql_text(Path(folder))}")
        conn.exec_driver_sql(f"SET memory_limit = '{COPY_READ_MEMORY}'")
        conn.exec_driver_sql("SET threads = 1")
        yield


def _frames_in_batches(conn: Connection, stmt: sa.Select[Any], size: int = COPY_BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """A select's rows as frames of at most `size` rows, in schema dtypes, without reading them all at once."""
    target = {c.name: polars_type(c) for c in stmt.selected_columns}
    if conn.dialect.name == "duckdb":
        reader = conn.execute(stmt).cursor.to_arrow_reader(size)
        for batch in reader:
            yield cast_to(pl.from_arrow(batch), target)  # type: ignore[arg-type]
        return
    result = conn.execution_options(stream_results=True, yield_per=size).execute(stmt)
    for part in result.partitions(size):
        yield pl.DataFrame([tuple(r) for r in part], schema=target, orient="row")


_SEQUENCE_IN_DEFAULT = re.compile(r"nextval\('([A-Za-z0-9_.]+)'\)")


def _advance_id_sequence(conn: Connection, table: sa.Table) -> None:
    """Move the sequence behind `table.id` past the largest stored id (after rows were inserted with ids)."""
    top = int(conn.scalar(sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0))) or 0)
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :v, :called)"),
                     {"t": table.name, "v": max(top, 1), "called": top > 0})
    elif conn.dialect.name == "duckdb" and top > 0:
        default = conn.scalar(sa.text("SELECT column_default FROM duckdb_columns() "
                                      "WHERE table_name = :t AND column_name = 'id'"), {"t": table.name})
        m = _SEQUENCE_IN_DEFAULT.search(str(default or ""))
        if m is None:
            return
        seq = m.group(1)  # a plain identifier (the pattern allows nothing else)
        current = int(conn.scalar(sa.text(f"SELECT nextval('{seq}')")) or 0)  # DuckDB has no setval
        if current < top:
            conn.execute(sa.text(f"SELECT max(nextval('{seq}')) FROM range({int(top - current)})"))

