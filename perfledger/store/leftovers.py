"""What a killed process can leave behind, and its removal when a store is opened for writing.

A run's rows commit in one transaction on both backends (see `COMMIT_BY_CHECKPOINT`), so a kill leaves no part
of a run visible. Two kinds of leftovers are still swept on a process's first write to a store:

- step and result rows whose run does not exist: a DuckDB store written before commits went by checkpoint could
  hold them (1,379,304 such steps after one kill), and DuckDB still logs a commit in its WAL when another
  transaction of the process is open on the file at that moment;
- spool folders (a run's steps in Parquet, a copy's frames) of processes that no longer run: the folders are
  named `perfledger-<kind>-<pid>-<random>` in the temporary directory, and only those whose PID is gone are
  removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema
from perfledger.spools import SPOOL_NAME

# DuckDB 1.5.6 writes a big INSERT's row groups straight into the database file and, at commit, logs in the WAL
# the results, then pointers to those row groups, then the run row, then the commit marker. A kill while that
# WAL is being written leaves a WAL cut short; on the next open DuckDB replays the row-group pointers it finds
# (the steps become visible) but drops the rows logged after them and after the cut (the run row): steps with
# no run. With a threshold of 0 bytes, a writing transaction commits by a checkpoint instead: DuckDB writes the
# data, then switches the file's header in one write, and never writes the WAL. A kill at any moment leaves the
# old header (nothing of the run) or the new one (all of it). The setting is the database's, so every later
# commit of this process to the file goes the same way.
COMMIT_BY_CHECKPOINT = "SET checkpoint_threshold = '0b'"


def remove_dead_spools(parent: Path | None = None) -> list[Path]:
    """Remove the spool folders (in `parent`, else the temporary directory) whose process no longer runs."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    for path in entries:
        m = SPOOL_NAME.match(path.name)
        if m is None or not path.is_dir() or _alive(int(m.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user holds that PID
        return True
    except OverflowError:
        return False
    return True


def remove_orphan_rows(conn: Connection) -> dict[str, int]:
    """Delete step and result rows whose run is not stored, in the caller's transaction; rows deleted per table.

    Run only against DuckDB: PostgreSQL never showed a partial run. A run's id comes from the run table's
    sequence, so a row left by a run whose write did not complete carries an id that is not stored: past the
    largest stored one, or in a gap between two (a run deleted, a write rolled back). Each such range is deleted
    by a filter on `run_id` bounded by constants, which DuckDB checks against each row group's min and max (steps
    go in run by run): the sweep reads the row groups of those ranges, not every step of the store.
    """
    inspector = sa.inspect(conn)
    if not (inspector.has_table("run") and inspector.has_table("step") and inspector.has_table("result")):
        return {}
    stored = conn.execute(sa.select(schema.run.c.id).order_by(schema.run.c.id)).scalars().all()
    gone = {"step": 0, "result": 0}
    for low, high in ids_not_stored(stored):
        gone["step"] += conn.execute(sa.delete(schema.step).where(
            *_within(schema.step.c.run_id, low, high))).rowcount
        gone["result"] += conn.execute(sa.delete(schema.result).where(
            schema.result.c.run_id.is_not(None), *_within(schema.result.c.run_id, low, high))).rowcount
    return {table: int(n) for table, n in gone.items() if n}


def ids_not_stored(stored: Sequence[int]) -> list[tuple[int | None, int | None]]:
    """The ranges of ids (inclusive; None: unbounded) that no stored run has, given the stored ids in order."""
    if not stored:
        return [(None, None)]
    ranges: list[tuple[int | None, int | None]] = [(None, stored[0] - 1)]
    ranges += [(a + 1, b - 1) for a, b in pairwise(stored) if b > a + 1]
    return [*ranges, (stored[-1] + 1, None)]


def _within(column: sa.ColumnElement[int], low: int | None, high: int | None) -> list[sa.ColumnElement[bool]]:
    return [c for c in (None if low is None else column >= low, None if high is None else column <= high)
            if c is not None]
