"""How a reader opens a DuckDB file: read-only, so many readers share it and only writers lock it."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event


def opens_read_only(engine: Engine) -> bool:
    """Whether a reader of `engine` opens it read-only: an existing DuckDB file.

    DuckDB lets many processes open a file read-only at once, but none while one holds it read-write. Readers
    that opened it read-write (a page render, a copy or backup out of the file) locked each other out: a copy
    running made 6 of 33 page loads say "the store is busy". Now only writers hold it read-write, for their
    transaction; a reader meeting one retries as a writer does. A file not made yet is opened as it is (a read
    of a new store makes it, empty).
    """
    database = engine.url.database
    if engine.dialect.name != "duckdb" or database in (None, "", ":memory:") or not Path(database).exists():
        return False
    if not event.contains(engine, "do_connect", _read_only_when_asked):
        event.listen(engine, "do_connect", _read_only_when_asked)
    return True


OPENING_TO_READ: ContextVar[bool] = ContextVar("perfledger_opening_to_read", default=False)


def _read_only_when_asked(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
    if OPENING_TO_READ.get():
        cparams["read_only"] = True
