"""Bulk appends inside the caller's transaction, in memory that does not grow with the rows.

PostgreSQL: COPY (the server holds the rows). DuckDB keeps a transaction's appended rows in memory until it
commits, so rows are read from Parquet files by one INSERT ... SELECT, which DuckDB writes to its file row group
by row group under a memory limit. Reading the files with DuckDB's own Parquet reader also keeps pyarrow (about
100 MB resident) out of an ingest process.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema
from perfledger.records import STEP_SCHEMA, StepFiles
from perfledger.spools import spool_folder, spooling, sql_text
from perfledger.store.lake import LakeSpec, lake_of
from perfledger.store.lake_steps import staged

# DuckDB's memory for one INSERT of spooled steps, on one thread (DuckDB 1.5.6). Each inserting thread fills row
# groups of its own (122,880 rows, about 15 MB of step columns): one thread needs 13 MB at any size (10 M steps with
# every column filled passed under 20 MB), two need 24-35 MB, so under a limit for two a run's insert failed
# ("failed to pin block") whenever anything else of its transaction held a little memory: the run row written just
# before (with its index) made 10 M nanoGPT steps fail into an initialised store, and a copy failed from 491,520
# steps, where it went parallel. On this 2-core machine one thread was as fast as two (2.5 M steps: 3-12 s either
# way, the machine shared). DuckDB keeps written blocks cached up to the limit: 64 -> 40 MB lowered the 1 GB
# Megatron log's peak RSS by about 25 MB at the same speed.
DUCKDB_INSERT_MEMORY = "32MB"
DUCKDB_INSERT_THREADS = 1
# After the insert, the limit is lowered to this for a moment: DuckDB then drops the blocks it keeps cached (the
# insert wrote them to the file already), so later work of the process does not sit on them. The 1 GB Megatron
# log's peak RSS went from 276-306 to 248-266 MB (4 runs each).
DUCKDB_EVICT_MEMORY = "16MB"
COPY_SLICE_ROWS = 50_000  # rows read from a Parquet file at a time for PostgreSQL's COPY


def quoted(conn: Connection, names: Sequence[str]) -> str:
    return ", ".join(conn.dialect.identifier_preparer.quote(n) for n in names)


def insert_parquet(conn: Connection, table: sa.Table, files: Sequence[Path], columns: Sequence[str], *,
                   order_shows: bool, constants: dict[str, int] | None = None) -> None:
    """Append the rows of Parquet files (`columns`, NaN stored as NULL) to `table`, in the caller's transaction.

    `constants` are columns given one value for every row (a run's id). When `order_shows` is False, every read
    of the rows orders them by a column they hold strictly increasing (a run's steps, ORDER BY step): the order
    they are stored in cannot show, so DuckDB need not keep it. DuckDB inserts on one thread (see
    DUCKDB_INSERT_MEMORY), so the memory does not depend on the machine's cores either.
    """
    if not files:
        return
    constants = constants or {}
    if conn.dialect.name == "duckdb":
        _duckdb_insert(conn, table, files, columns, order_shows=order_shows, constants=constants)
    else:
        with _copy(conn, table, [*constants, *columns]) as write_row:
            lead = tuple(constants.values())
            for frame in _parquet_slices(files, columns):
                for row in frame.iter_rows():
                    write_row(lead + row)


def insert_step_files(conn: Connection, runs: Sequence[tuple[int, StepFiles]]) -> None:
    """Append the steps of several runs (each run's id and its step files) to the step table in one statement
    (DuckDB: one INSERT ... SELECT over every file, each row given its file's run; PostgreSQL: one COPY), in the
    caller's transaction. A run's rows keep their files' order when that order can show (see insert_parquet)."""
    runs = [(run_id, steps) for run_id, steps in runs if steps.files]
    if not runs:
        return
    lake = lake_of(conn.engine)
    if lake is not None:  # a DuckLake store's steps: written in the lake's transaction, committed with this one
        staged(conn, lake).add_runs(runs)
        return
    columns = list(STEP_SCHEMA)
    if conn.dialect.name != "duckdb":
        with _copy(conn, schema.step, ["run_id", *columns]) as write_row:
            for run_id, steps in runs:
                for frame in _parquet_slices(steps.files, columns):
                    for row in frame.iter_rows():
                        write_row((run_id, *row))
        return
    of_file = " ".join(f"WHEN {sql_text(path)} THEN {int(run_id)}" for run_id, steps in runs for path in steps.files)
    floats = {c.name for c in schema.step.columns if isinstance(c.type, sa.Float)}
    prep = conn.dialect.identifier_preparer
    values = [f"CASE filename {of_file} END"] + [
        f"nullif({prep.quote(c)}, 'NaN'::DOUBLE)" if c in floats else prep.quote(c) for c in columns]
    names = ", ".join(sql_text(path) for _, steps in runs for path in steps.files)
    with duckdb_insert_settings(conn, order_shows=not all(steps.increasing for _, steps in runs)):
        conn.exec_driver_sql(f"INSERT INTO step ({quoted(conn, ['run_id', *columns])}) SELECT {', '.join(values)} "
                             f"FROM read_parquet([{names}], union_by_name = true, filename = true)")


def _duckdb_insert(conn: Connection, table: sa.Table, files: Sequence[Path], columns: Sequence[str], *,
                   order_shows: bool, constants: dict[str, int]) -> None:
    floats = {c.name for c in table.columns if isinstance(c.type, sa.Float)}
    prep = conn.dialect.identifier_preparer
    values = [f"{int(v)}" for v in constants.values()] + [
        f"nullif({prep.quote(c)}, 'NaN'::DOUBLE)" if c in floats else prep.quote(c) for c in columns]
    names = ", ".join(sql_text(path) for path in files)
    with duckdb_insert_settings(conn, order_shows=order_shows):
        conn.exec_driver_sql(f"INSERT INTO {prep.quote(table.name)} ({quoted(conn, [*constants, *columns])}) "
                             f"SELECT {', '.join(values)} FROM read_parquet([{names}], union_by_name = true)")


@contextmanager
def duckdb_insert_settings(conn: Connection, *, order_shows: bool) -> Iterator[None]:
    """The memory limit, threads and insertion order for one big INSERT; afterwards DuckDB's cached blocks are
    dropped and its settings put back. On an error the transaction is rolled back and its connection closed
    (NullPool), settings with it."""
    # Without a limit DuckDB keeps every written block cached: ~50 B per row of resident memory.
    conn.exec_driver_sql(f"SET memory_limit = '{DUCKDB_INSERT_MEMORY}'")
    threads = conn.exec_driver_sql("SELECT current_setting('threads')").scalar()
    conn.exec_driver_sql(f"SET threads = {DUCKDB_INSERT_THREADS}")
    if not order_shows:
        conn.exec_driver_sql("SET preserve_insertion_order = false")
    yield
    conn.exec_driver_sql("RESET preserve_insertion_order")
    conn.exec_driver_sql(f"SET memory_limit = '{DUCKDB_EVICT_MEMORY}'")
    # RESET alone puts the setting back but leaves DuckDB 1.5.6's buffer pool at the lowered limit, for every
    # later query of the database in this process: the limit is set again by value.
    conn.exec_driver_sql("RESET memory_limit")
    default = conn.exec_driver_sql("SELECT current_setting('memory_limit')").scalar()
    conn.exec_driver_sql(f"SET memory_limit = '{default}'")
    conn.exec_driver_sql(f"SET threads = {int(str(threads))}")


def _parquet_slices(files: Sequence[Path], columns: Sequence[str]) -> Iterator[pl.DataFrame]:
    for path in files:
        scan = pl.scan_parquet(path).select(columns)
        offset = 0
        while (frame := scan.slice(offset, COPY_SLICE_ROWS).collect()).height:
            yield frame.with_columns(pl.col(pl.Float64).fill_nan(None))
            offset += frame.height


@contextmanager
def _copy(conn: Connection, table: sa.Table, columns: Sequence[str]) -> Iterator[Any]:
    """PostgreSQL's COPY FROM STDIN into `table`; yields its write_row."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    prep = conn.dialect.identifier_preparer
    with cursor.copy(f"COPY {prep.quote(table.name)} ({quoted(conn, columns)}) FROM STDIN") as copy:
        yield copy.write_row


class FrameWriter:
    """Appends frames to one table inside the caller's transaction (copy_store's writer).

    DuckDB: frames are spooled to Parquet files and inserted once the last frame is in (see the module's note);
    PostgreSQL: one COPY per frame; a DuckLake store's steps: spooled, then inserted in the lake's transaction.
    """

    def __init__(self, conn: Connection, table: sa.Table) -> None:
        self.conn = conn
        self.table = table
        self._spool: tempfile.TemporaryDirectory[str] | None = None
        self._files: list[Path] = []
        self._columns: list[str] = []
        self._lake: LakeSpec | None = None

    def __enter__(self) -> Self:
        self._lake = lake_of(self.conn.engine) if self.table is schema.step else None
        if self.conn.dialect.name == "duckdb" or self._lake is not None:
            self._spool = spool_folder("frames")
        return self

    def add(self, frame: pl.DataFrame) -> int:
        if frame.height == 0:
            return 0
        self._columns = self._columns or frame.columns
        if self._spool is not None:
            path = Path(self._spool.name) / f"{len(self._files):08d}.parquet"
            with spooling(Path(self._spool.name).parent):
                frame.write_parquet(path, compression="lz4", statistics=False)
            self._files.append(path)
        else:
            with _copy(self.conn, self.table, frame.columns) as write_row:
                for row in frame.iter_rows():
                    write_row(row)
        return frame.height

    def __exit__(self, exc_type: object, *_: object) -> None:
        if self._spool is None:
            return
        with self._spool:
            if exc_type is not None:  # the transaction is rolled back and its connection closed (NullPool)
                return
            if self._lake is not None:
                staged(self.conn, self._lake).add_files(self._files)
            else:
                insert_parquet(self.conn, self.table, self._files, self._columns, order_shows=True)
