"""Spool folders on local disk (a run's steps in Parquet, a copy's frames, an upload's bytes): their names and the
sentence a full disk under them gives. Not the store's: ingest writes spools without touching the database, and
perfledger.store.leftovers removes the folders of processes gone by these names."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from perfledger.errors import SpoolFull, is_disk_full

SPOOL_PREFIX = "perfledger-"
SPOOL_NAME = re.compile(rf"^{SPOOL_PREFIX}[a-z]+-(\d+)-")
SORT_MEMORY = "32MB"  # an external sort's memory; past it, DuckDB spills to the spool


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


def spool_dir(kind: str) -> Path:
    """A folder named like spool_folder's that lives until removed (no finalizer): runs prepared by worker
    processes keep their step files in it until the importing process has stored them."""
    return Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{kind}-{os.getpid()}-"))


def sort_parquet(files: Sequence[Path], column: str, out: Path) -> Path:
    """The rows of Parquet files (columns matched by name) sorted by `column`, written to `out`; ties keep the
    order of the files' names, then of their rows. An external sort in an in-memory DuckDB that spills to disk
    past SORT_MEMORY, so its memory does not grow with the rows."""
    import duckdb  # here, not at the top: an ingest into PostgreSQL of steps in order never loads DuckDB (~50 MB)

    names = ", ".join(sql_text(path) for path in files)
    key = '"' + column.replace('"', '""') + '"'
    with duckdb.connect() as con:
        # Two threads: DuckDB's threads share the memory limit, and many of them under 64 MB fail. Ties are
        # ordered by the file's place in the list and the row's in its file (numbers: the file's name as a key
        # made every row carry its path through the sort).
        con.execute(f"SET threads = 2; SET memory_limit = '{SORT_MEMORY}'; "
                    f"SET temp_directory = {sql_text(out.parent / (out.name + '.spill'))}")
        con.execute(f"COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet([{names}], "
                    "union_by_name = true, file_row_number = true) "
                    f"ORDER BY {key}, file_index, file_row_number) TO {sql_text(out)} (FORMAT parquet)")
    return out


def sql_text(path: Path) -> str:
    """A path as an SQL string literal (DuckDB's COPY, read_parquet and SET take no bound parameter)."""
    return "'" + str(path).replace("'", "''") + "'"
