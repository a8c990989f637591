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
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Connection

from perfledger import schema
from perfledger.errors import SpoolFull, is_disk_full

# DuckDB 1.5.6 writes a big INSERT's row groups straight into the database file and, at commit, logs in the WAL
# the results, then pointers to those row groups, then the run row, then the commit marker. A kill while that
# WAL is being written leaves a WAL cut short; on the next open DuckDB replays the row-group pointers it finds
# (the steps become visible) but drops the rows logged after them and after the cut (the run row): steps with
# no run. With a threshold of 0 bytes, a writing transaction commits by a checkpoint instead: DuckDB writes the
# data, then switches the file's header in one write, and never writes the WAL. A kill at any moment leaves the
# old header (nothing of the run) or the new one (all of it). The setting is the database's, so every later
# commit of this process to the file goes the same way.
COMMIT_BY_CHECKPOINT = "SET checkpoint_threshold = '0b'"

SPOOL_PREFIX = "perfledger-"
_SPOOL_NAME = re.compile(rf"^{SPOOL_PREFIX}[a-z]+-(\d+)-")


@contextmanager
def spooling(where: Path) -> Iterator[None]:
    """Writes into a spool under the folder `where` (Parquet by Polars or DuckDB, an upload's bytes) that meet a
    full disk raise SpoolFull, which names that folder, not the store's: a 40-line Polars traceback before."""
    try:
        yield
    except Exception as exc:
        if is_disk_full(exc):
            raise SpoolFull(str(where)) from exc
        raise


def spool_folder(kind: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder named after this process, so that a later process can tell when its owner is gone."""
    return tempfile.TemporaryDirectory(prefix=f"{SPOOL_PREFIX}{kind}-{os.getpid()}-")


def remove_dead_spools(parent: Path | None = None) -> list[Path]:
    """Remove the spool folders (in `parent`, else the temporary directory) whose process no longer runs."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    for path in entries:
        m = _SPOOL_NAME.match(path.name)
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

    Run only against DuckDB: PostgreSQL never showed a partial run, and the anti-join reads every step row
    (about 10 ms per million on DuckDB, from its `run_id` column alone).
    """
    inspector = sa.inspect(conn)
    if not (inspector.has_table("run") and inspector.has_table("step") and inspector.has_table("result")):
        return {}
    runs = sa.select(schema.run.c.id)
    gone = {
        "step": conn.execute(sa.delete(schema.step).where(schema.step.c.run_id.not_in(runs))).rowcount,
        "result": conn.execute(sa.delete(schema.result).where(
            schema.result.c.run_id.is_not(None), schema.result.c.run_id.not_in(runs))).rowcount,
    }
    return {table: int(n) for table, n in gone.items() if n}
