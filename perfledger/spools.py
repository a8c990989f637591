"""Spool folders on local disk (a run's steps in Parquet, a copy's frames, an upload's bytes): their names and the
sentence a full disk under them gives. Not the store's: ingest writes spools without touching the database, and
perfledger.store.leftovers removes the folders of processes gone by these names."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from perfledger.errors import SpoolFull, is_disk_full

SPOOL_PREFIX = "perfledger-"
SPOOL_NAME = re.compile(rf"^{SPOOL_PREFIX}[a-z]+-(\d+)-")


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
