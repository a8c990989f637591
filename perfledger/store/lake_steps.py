"""The `step` rows of a store kept in a DuckLake (perfledger.store.lake): written with their run, read, deleted.

Where each row lives. The ledger (run, result, source, catalog, campaign and outcome rows) stays in the store's
PostgreSQL database; a run's steps are rows of the lake's table `step` (the same columns as schema.step), Parquet
files under the lake's data path, whose catalog is a schema of that same database. The PostgreSQL database of a
DuckLake store has no `step` table of its own.

One write spans two transactions: the ledger's (SQLAlchemy, on PostgreSQL) and the lake's (DuckDB, whose commit
writes the lake's catalog). The run row is the commit point: a run is stored when its row is, and every read of
steps goes through a run row. So the lake commits first and the ledger last (`StepsWrite`):

1. the steps are inserted in the lake's open transaction while the ledger's is open too (DuckLake writes their
   Parquet files then: a data path that is read-only or full fails here, before anything is committed);
2. just before the ledger commits, the lake commits (a catalog that cannot be reached fails here);
3. the ledger commits: the run row and its steps are visible together.

A failure before 3 rolls both back: nothing is stored, and a rolled-back lake transaction removes the files it
wrote. A failure in 3 (the ledger's commit refused, or the process killed between 2 and 3) leaves steps under a
run id that no run row holds and none ever will (ids come from a sequence): no page or command reads them; the
writer deletes them at once if it still can, and `perfledger init` sweeps any that remain (`sweep_orphans`). The
sweep holds an exclusive advisory lock of the ledger's database while writers hold it shared from step 2 to 3, so
it never takes the steps of a run whose ledger commit is under way.

A deletion is the other way round (`StepsDelete`): the steps are deleted in the lake's open transaction (delete
files written: a read-only or full data path fails before anything is committed), the ledger deletes the run and
commits, then the lake commits. If that last commit fails, the run is gone and its steps are left unread until the
next sweep; nothing stored is lost in any order of failures.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema
from perfledger.errors import StoreError
from perfledger.records import StepFiles
from perfledger.store.engine import join_write, sides_of
from perfledger.store.lake import LakeSpec, alias_of, lake_cursor, lake_errors, new_cursor, sql_literal, step_table

COLUMNS = tuple(c.name for c in schema.step.columns)  # run_id first, then the step columns
# Writers hold it shared from their lake commit to their ledger commit; the sweep takes it exclusively, or skips.
# Any constant works; this one reads "perfstep" in ASCII.
SWEEP_LOCK_KEY = 0x70657266_73746570
LAKE_FAULTS = (StoreError, duckdb.Error)
_TYPES = {sa.BigInteger: "BIGINT", sa.Integer: "INTEGER", sa.Float: "DOUBLE"}


def _column_type(column: sa.Column[Any]) -> str:
    return next(name for kind, name in _TYPES.items() if isinstance(column.type, kind))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def create_step_table(lake: LakeSpec) -> list[str]:
    """The lake's step table made if missing, and any schema.step column it lacks added; the columns added."""
    table = step_table(lake)
    with lake_cursor(lake) as cur:
        spec = ", ".join(f"{_quoted(c.name)} {_column_type(c)}" for c in schema.step.columns)
        cur.execute(f"CREATE TABLE IF NOT EXISTS {table} ({spec})")
        held = {row[0] for row in cur.execute(f"DESCRIBE {table}").fetchall()}
        added = [c for c in schema.step.columns if c.name not in held]
        for column in added:
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {_quoted(column.name)} {_column_type(column)}")
    return [f"step.{c.name}" for c in added]


def drop_step_table(lake: LakeSpec) -> None:
    table = step_table(lake)
    with lake_cursor(lake) as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")


def has_step_table(lake: LakeSpec) -> bool:
    with lake_cursor(lake) as cur:
        return bool(cur.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = "
                                "'step'", [alias_of(lake)]).fetchone()[0])


# ---------------------------------------------------------------- writing, with the ledger's transaction

class StepsWrite:
    """The lake's side of one ledger write that stores steps: committed just before the ledger (see the module's
    note); rolled back with it, or, once committed, undone as far as the lake can still be reached."""

    after = False

    def __init__(self, conn: Connection, lake: LakeSpec) -> None:
        self.conn, self.lake, self.table = conn, lake, step_table(lake)
        self.cursor = new_cursor(lake)
        self.committed = False
        self.run_ids: set[int] = set()
        with lake_errors(lake):
            self.cursor.execute("BEGIN")

    def add_runs(self, runs: Sequence[tuple[int, StepFiles]]) -> None:
        """Every run's steps (its id and its Parquet spool), each row given its file's run, NaN stored as NULL."""
        runs = [(run_id, steps) for run_id, steps in runs if steps.files]
        if not runs:
            return
        of_file = " ".join(f"WHEN {sql_literal(str(path))} THEN {int(run_id)}"
                           for run_id, steps in runs for path in steps.files)
        self._insert([path for _, steps in runs for path in steps.files], f"CASE filename {of_file} END")
        self.run_ids.update(run_id for run_id, _ in runs)

    def add_files(self, files: Sequence[Path]) -> None:
        """Rows of Parquet files that carry their run_id (a copy's frames)."""
        if files:
            self._insert(files, None)

    def _insert(self, files: Sequence[Path], run_id: str | None) -> None:
        floats = {c.name for c in schema.step.columns if isinstance(c.type, sa.Float)}
        values = [run_id or _quoted("run_id")] + [
            f"nullif({_quoted(c)}, 'NaN'::DOUBLE)" if c in floats else _quoted(c) for c in COLUMNS[1:]]
        names = ", ".join(sql_literal(str(path)) for path in files)
        with lake_errors(self.lake):
            self.cursor.execute(f"INSERT INTO {self.table} ({', '.join(map(_quoted, COLUMNS))}) SELECT {', '.join(values)} "
                                f"FROM read_parquet([{names}], union_by_name = true, filename = true)")

    def count(self) -> int:
        """The lake's steps as this transaction sees them (its own rows included)."""
        with lake_errors(self.lake):
            return int(self.cursor.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])

    def commit(self) -> None:
        self.conn.execute(sa.text("SELECT pg_advisory_xact_lock_shared(:key)"), {"key": SWEEP_LOCK_KEY})
        with lake_errors(self.lake):
            self.cursor.execute("COMMIT")
        self.committed = True
        self.cursor.close()

    def rollback(self) -> None:
        """Roll the lake back; after its commit (the ledger's then failed), delete what it committed if the lake
        can still be reached (else the sweep will)."""
        # the ledger's own failure is what the caller hears; what cannot be undone here is swept
        try:
            with suppress(*LAKE_FAULTS):
                if not self.committed:
                    self.cursor.execute("ROLLBACK")
                elif self.run_ids:
                    with lake_cursor(self.lake) as cur:
                        ids = ", ".join(map(str, sorted(self.run_ids)))
                        cur.execute(f"DELETE FROM {self.table} WHERE run_id IN ({ids})")
        finally:
            self.cursor.close()


def staged(conn: Connection, lake: LakeSpec) -> StepsWrite:
    """The StepsWrite of the write open on `conn`, begun at its first use."""
    for side in sides_of(conn):
        if isinstance(side, StepsWrite):
            return side
    side = StepsWrite(conn, lake)
    join_write(conn, side)
    return side


class StepsDelete:
    """The lake's side of a ledger write that deletes runs: the rows deleted at once, committed after the ledger."""

    after = True

    def __init__(self, lake: LakeSpec) -> None:
        self.lake, self.table = lake, step_table(lake)
        self.cursor = new_cursor(lake)
        with lake_errors(lake):
            self.cursor.execute("BEGIN")

    def delete(self, run_id: int) -> None:
        with lake_errors(self.lake):
            self.cursor.execute(f"DELETE FROM {self.table} WHERE run_id = ?", [int(run_id)])

    def commit(self) -> None:
        try:
            with lake_errors(self.lake):
                self.cursor.execute("COMMIT")
        except LAKE_FAULTS as exc:  # the run is deleted: its steps stay unread until the next sweep
            print(f"the run is deleted; its steps stay in the lake until `python -m perfledger init` sweeps them "
                  f"({exc})", file=sys.stderr, flush=True)
        finally:
            self.cursor.close()

    def rollback(self) -> None:
        try:
            with suppress(*LAKE_FAULTS):
                self.cursor.execute("ROLLBACK")
        finally:
            self.cursor.close()


def delete_run_steps(conn: Connection, lake: LakeSpec, run_id: int) -> None:
    """Delete a run's steps with the write open on `conn` (see StepsDelete)."""
    side = next((s for s in sides_of(conn) if isinstance(s, StepsDelete)), None)
    if side is None:
        side = StepsDelete(lake)
        join_write(conn, side)
    side.delete(run_id)


def sweep_orphans(conn: Connection, lake: LakeSpec) -> int | None:
    """Delete the lake's steps whose run the ledger does not hold (a writer killed between its two commits); how
    many, or None when writers were mid-commit (the sweep is left to a later call). In `conn`'s transaction, whose
    end releases the lock."""
    table = step_table(lake)
    if not conn.scalar(sa.text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": SWEEP_LOCK_KEY}):
        return None
    stored = pl.DataFrame({"id": conn.execute(sa.select(schema.run.c.id)).scalars().all()}, schema={"id": pl.Int64})
    with lake_cursor(lake) as cur:
        cur.register("stored_runs", stored.to_arrow())
        row = cur.execute(f"DELETE FROM {table} WHERE run_id NOT IN (SELECT id FROM stored_runs)").fetchone()
    return int(row[0]) if row else 0


# ---------------------------------------------------------------- reading

def read_steps(lake: LakeSpec, run_id: int, columns: Sequence[str]) -> pl.DataFrame:
    """A run's steps (`columns`), by step; repeated steps in the order they were stored."""
    table = step_table(lake)
    names = ", ".join(map(_quoted, columns))
    with lake_cursor(lake) as cur:
        frame: pl.DataFrame = cur.execute(f"SELECT {names} FROM {table} WHERE run_id = ? ORDER BY step, rowid",
                                          [int(run_id)]).pl()
    return frame


def step_batches(lake: LakeSpec, columns: Sequence[str], *, run_id: int | None = None,
                 run_ids: Sequence[int] | None = None, batch_rows: int) -> Iterator[pl.DataFrame]:
    """Steps as frames of at most `batch_rows` rows without holding them all: one run's by step, or those of
    `run_ids` (the ledger's runs: a copy) by run and step; repeated steps in the order they were stored. The sort
    spills to the lake's spool folder past its memory limit."""
    table = step_table(lake)
    names = ", ".join(map(_quoted, columns))
    with lake_cursor(lake) as cur:
        if run_id is not None:
            sql, params = f"SELECT {names} FROM {table} WHERE run_id = ? ORDER BY step, rowid", [int(run_id)]
        else:
            cur.register("stored_runs", pl.DataFrame({"id": list(run_ids or [])}, schema={"id": pl.Int64}).to_arrow())
            sql, params = (f"SELECT {names} FROM {table} WHERE run_id IN (SELECT id FROM stored_runs) "
                           "ORDER BY run_id, step, rowid"), []
        for batch in cur.execute(sql, params).to_arrow_reader(batch_rows):
            yield pl.from_arrow(batch)  # type: ignore[misc]


def count_steps(lake: LakeSpec, run_ids: Sequence[int] | None = None) -> int:
    """The lake's steps: all of them, or those of `run_ids`."""
    table = step_table(lake)
    with lake_cursor(lake) as cur:
        if run_ids is None:
            return int(cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        cur.register("stored_runs", pl.DataFrame({"id": list(run_ids)}, schema={"id": pl.Int64}).to_arrow())
        return int(cur.execute(f"SELECT count(*) FROM {table} WHERE run_id IN (SELECT id FROM stored_runs)")
                   .fetchone()[0])
