"""python -m perfledger backup FILE | restore FILE: the whole store into a new DuckDB file, and back.

Both are `copy` (perfledger.store.copy_store) with one end a file: every table, ids kept, row counts checked before
the commit. A backup reads the store as any reader does (the dashboard keeps serving), writes FILE.partial and
renames it to FILE only when the copy is complete, so FILE is never half a backup. A restore needs an empty store.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfledger import store
from perfledger.errors import InvalidInput


def file_url(path: str) -> str:
    """The store URL of a DuckDB file named on the command line.

    >>> file_url("/srv/ledger-backup.duckdb")
    'duckdb:////srv/ledger-backup.duckdb'
    """
    return f"duckdb:///{Path(path).resolve()}"


def register(sub: Any) -> None:
    """Add `backup` and `restore` to the CLI's subparsers; `dst` is the store each writes (for fault messages)."""
    backup = sub.add_parser("backup", help="copy the whole store into a new DuckDB file (the dashboard keeps serving)")
    backup.add_argument("file", type=Path, help="the backup file to create (must not exist)")
    backup.add_argument("--db", help="the store to back up (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")
    restore = sub.add_parser("restore", help="copy a backup file into an empty store (DuckDB or PostgreSQL)")
    restore.add_argument("file", type=Path, help="a file made by `perfledger backup`")
    restore.add_argument("--db", help="the empty store to fill (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")


def cmd_backup(args: argparse.Namespace) -> int:
    target: Path = args.file
    if target.exists():
        raise InvalidInput(f"{target} exists; back up into a new file")
    partial = target.with_name(target.name + ".partial")
    _remove(partial)
    args.dst = file_url(str(partial))
    source = store.engine_from_url(args.db)
    try:
        report = store.copy_store(source, store.engine_from_url(args.dst))
    except BaseException:
        _remove(partial)
        raise
    partial.rename(target)
    _remove(partial)  # the writers' lock file the copy left beside it
    print(f"backed up {store.mask_url(str(source.url))} into {target}: " + _rows(report))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    backup: Path = args.file
    if not backup.is_file():
        raise InvalidInput(f"{backup} is not a file; name a file made by `python -m perfledger backup`")
    destination = store.engine_from_url(args.db)
    report = store.copy_store(store.engine_from_url(file_url(str(backup))), destination)
    print(f"restored {backup} into {store.mask_url(str(destination.url))}: " + _rows(report))
    return 0


def _rows(report: dict[str, int]) -> str:
    return ", ".join(f"{n} {t}" for t, n in report.items()) + "; row counts verified"


def _remove(database: Path) -> None:
    for path in (database, database.with_name(database.name + ".wal"), database.with_name(database.name + ".writers")):
        path.unlink(missing_ok=True)
