"""Engines and connections: an engine from a URL, one connection per call, driver errors as perfledger errors.

No connection is held between calls (NullPool), so another process can take DuckDB's file lock whenever
no query of ours is running; inside `reading()` (one page render) the reads share one connection instead.
Readers open a DuckDB file read-only, writers read-write for their transaction only (see `reading_files.opens_read_only`).
Driver exceptions become perfledger errors here and nowhere else.
"""

from __future__ import annotations

import errno
import re
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import sqlalchemy as sa
from duckdb import Error as DuckDBError
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from perfledger.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError, StoreNotInitialised, is_disk_full
from perfledger.settings import load_settings
from perfledger.store.lake import LakeSpec, is_lake_url, keep_steps_in, lake_of, refuse_plain_opening
from perfledger.store.leftovers import COMMIT_BY_CHECKPOINT, remove_dead_spools, remove_orphan_rows
from perfledger.store.reading_files import OPENING_TO_READ, opens_read_only
from perfledger.store.stamp import stamp_write
from perfledger.store.upgrade import pending as upgrade_pending
from perfledger.store.upgrade import upgrade
from perfledger.store.writers import RETRY_MAX_S, say_waiting, writer_turn


def engine_from_url(url: str | None = None) -> Engine:
    """An engine for the store at `url` (else PERFLEDGER_DB_URL, else the bundled DuckDB file); for a DuckLake URL
    (perfledger.store.lake), the engine of its ledger's PostgreSQL, marked as keeping its steps in the lake."""
    url = url or load_settings().db_url
    if is_lake_url(url):
        lake = LakeSpec.from_url(url)
        return keep_steps_in(engine_from_url(lake.ledger_url), lake)
    sa_url = sa.make_url(url)
    if sa_url.get_backend_name() == "duckdb" and sa_url.database not in (None, "", ":memory:"):
        try:
            Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(mask_url(url), f"its folder cannot be created ({exc.strerror})") from None
    # Read-only mode opens DuckDB read-only: a snapshot on a read-only volume can be served, and other readers
    # (a copy out of the file) are not locked out.
    read_only = sa_url.get_backend_name() == "duckdb" and load_settings().read_only
    try:
        return sa.create_engine(sa_url, poolclass=NullPool, connect_args={"read_only": True} if read_only else {})
    except Exception as exc:  # a bad URL or a missing driver: say which URL
        raise StoreError(mask_url(url), str(exc)) from exc


def url_of(engine: Engine) -> str:
    """The URL that opens `engine`'s store again, password included (for a worker process): a DuckLake store's
    own URL, not its ledger's alone."""
    lake = lake_of(engine)
    return lake.url if lake is not None else engine.url.render_as_string(hide_password=False)


def mask_url(url: str) -> str:
    """The URL with any password replaced by ***, for sidebars and messages."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def is_duckdb(engine: Engine) -> bool:
    return engine.dialect.name == "duckdb"


_HOLDER = re.compile(r"Conflicting lock is held in (\S+)(?: \(PID (\d+)\))?")


_LOCK_WORD = re.compile(r"\block\b", re.IGNORECASE)  # a word: DuckDB's out-of-memory error says "block"


# DuckDB 1.5 lets one instance per process hold a file. A connection opened while the instance of another
# connection of this process to the same file is still closing meets it ("Unique file handle conflict"): it is
# waited out like another process's lock. Seen as a second error on the Runs page in the browser tests (twice in
# seven runs before this): Streamlit's fast reruns start a session's new script run while the old one may still
# be closing.
_SAME_FILE_IN_PROCESS = "Unique file handle conflict"
# A writer of this process meeting its readers (the file open read-only), or a reader meeting its writer.
_OTHER_MODE_IN_PROCESS = "with a different configuration than existing connections"


def lock_holder(message: str) -> str | None:
    """Who holds the DuckDB file, from a driver's error message; None when the error is not about the lock."""
    if _SAME_FILE_IN_PROCESS in message or _OTHER_MODE_IN_PROCESS in message:
        return "another connection of this process"
    if _LOCK_WORD.search(message) is None:
        return None
    m = _HOLDER.search(message)
    if m is None:
        return "another process"
    return f"{m.group(1)} (PID {m.group(2)})" if m.group(2) else m.group(1)


_MISSING_TABLE = re.compile(r"Table with name \w+ does not exist|relation \"\w+\" does not exist")
_MISSING_COLUMN = re.compile(r"does not have a column named|column \S+ does not exist")
BEHIND = ("the store was made by an earlier release of perfledger and is read-only here: run `python -m perfledger "
          "init --db URL` once where writing is allowed")


def disk_of(engine: Engine) -> str:
    """The folder a store keeps its data in, in words: the DuckDB file's, else the database server's."""
    database = engine.url.database
    if is_duckdb(engine) and database not in (None, "", ":memory:"):
        return str(Path(str(database)).resolve().parent)
    return "the database server's data"


# The kinds of exception a store's driver, the OS or a Polars write under it raise: what the pages' and the CLI's
# boundaries hand to store_fault; any other exception is a bug and surfaces.
FAULT_TYPES: tuple[type[Exception], ...] = (SQLAlchemyError, DuckDBError, OSError, pl.exceptions.PolarsError)


def store_fault(exc: BaseException, engine: Engine) -> StoreError | None:
    """A driver's or the OS's exception that escaped `translated` (a lost connection, a full disk, a file that
    cannot be read), as the StoreError that says it; None for any other exception (a bug: left to surface)."""
    url = mask_url(str(engine.url))
    if is_disk_full(exc):
        return DiskFull(url, disk_of(engine), server_stopped=_server_panicked(getattr(exc, "orig", None) or exc))
    if isinstance(exc, SQLAlchemyError | DuckDBError) or isinstance(exc, OSError) and exc.errno in _FILE_ERRNOS:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return StoreError(url, first[0] if first else type(exc).__name__)
    return None


_FILE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO, errno.ENOENT})


@contextmanager
def translated(engine: Engine) -> Iterator[None]:
    """Driver errors inside the block raised as StoreBusy, StoreNotInitialised, DiskFull or StoreError: those
    SQLAlchemy wraps, and the driver's own (PostgreSQL's COPY runs on the driver's cursor, see `bulk`)."""
    try:
        yield
    except (DBAPIError, engine.dialect.loaded_dbapi.Error) as exc:
        raise _said(engine, exc.orig if isinstance(exc, DBAPIError) else exc) from exc


def _said(engine: Engine, orig: BaseException | None) -> StoreError:
    """The driver's exception `orig` as the StoreError that says it."""
    url = mask_url(str(engine.url))
    if orig is not None and is_disk_full(orig):
        return DiskFull(url, disk_of(engine), server_stopped=_server_panicked(orig))
    holder = lock_holder(str(orig))
    if holder is not None and is_duckdb(engine):
        return StoreBusy(url, holder)
    reason = str(orig).splitlines()[0]
    if _MISSING_TABLE.search(reason):
        return StoreNotInitialised(url, reason + " (is the store initialised? run: python -m perfledger init)")
    if _MISSING_COLUMN.search(reason):  # a read-only store of an earlier release (see _read_connection)
        return StoreError(url, reason + f" ({BEHIND})")
    return StoreError(url, reason)


def _server_panicked(orig: BaseException) -> bool:
    """Whether a PostgreSQL server said PANIC: it stopped every session, and it stays down while its write-ahead
    log's disk is full (the restart's recovery cannot write either)."""
    return getattr(getattr(orig, "diag", None), "severity_nonlocalized", None) == "PANIC"


@dataclass
class _Reading:
    """The connections a `reading()` block opened (one per engine) and the frames its queries returned."""

    connections: dict[Engine, Connection] = field(default_factory=dict)
    answers: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def close(self) -> None:
        connections, self.connections = self.connections, {}
        self.answers.clear()
        for conn in connections.values():
            conn.close()


_READING: ContextVar[_Reading | None] = ContextVar("perfledger_reading", default=None)


@contextmanager
def reading() -> Iterator[None]:
    """Reads inside the block share one connection per engine and repeat no query: one page render, one view.

    Opening a DuckDB connection reopens the file with cold caches (about 35 ms, then every query reads from
    disk again); a page render made 8-15 of them. The connection is opened at the first read, dropped before
    any write of the block (so the write commits alone, and reads after it see it), and closed at the end, so
    the file is free again between renders.
    """
    if _READING.get() is not None:
        yield
        return
    now = _Reading()
    token = _READING.set(now)
    try:
        yield
    finally:
        _READING.reset(token)
        now.close()


def hand_over() -> None:
    """Close the current `reading()` block's connections now (its next read opens one again): a process of ours
    is about to open the store, and would otherwise wait for this block's lock on the DuckDB file."""
    now = _READING.get()
    if now is not None:
        now.close()


def answers_for(conn: Connection) -> dict[tuple[Any, ...], Any] | None:
    """Where a query's answer on `conn` may be kept: the `reading()` block's, when it owns `conn`; else None."""
    now = _READING.get()
    if now is None or not any(c is conn for c in now.connections.values()):
        return None
    return now.answers


@contextmanager
def connection(engine: Engine, *, write: bool) -> Iterator[Connection]:
    """A connection (a transaction when writing), retrying DuckDB's file lock for a bounded time.

    Writers to a DuckDB file first wait for their turn in the writers' queue (see `writers`), so they queue
    instead of failing, and readers compete with one writer at a time.
    """
    if write and load_settings().read_only:
        raise ReadOnlyStore(mask_url(str(engine.url)))
    now = _READING.get()
    if now is not None and write:
        now.close()
    if now is not None and not write:
        yield from _shared(now, engine)
        return
    with writer_turn(engine, mask_url(str(engine.url))) if write else nullcontext(), \
            files_uncapped() if write else nullcontext():
        conn = _connect(engine, write=True) if write else _read_connection(engine)
        with translated(engine), conn:
            if write:
                sweep = _store_key(engine) not in _SWEPT
                if sweep:
                    upgrade(conn)  # a store of an earlier release: 64-bit steps, new columns, before any write
                sides = conn.info[_SIDES] = []
                try:
                    with conn.begin():
                        if is_duckdb(engine):
                            conn.exec_driver_sql(COMMIT_BY_CHECKPOINT)
                        if sweep:
                            _sweep(engine, conn)
                        yield conn
                        stamp_write(conn)
                        for side in sides:
                            if not side.after:
                                side.commit()
                except BaseException:
                    for side in reversed(sides):
                        side.rollback()
                    raise
                for side in sides:
                    if side.after:
                        side.commit()
                if sweep:
                    _SWEPT.add(_store_key(engine))
            else:
                yield conn


class SideTransaction(Protocol):
    """A transaction outside the store's database that one write spans (a DuckLake's steps, see lake_steps): it
    commits just before the store's own transaction (`after` False) or just after it, and is rolled back when
    the store's is (rollback() after a commit undoes what it can). A side that commits after the store's must not
    raise: the write is done by then."""

    after: bool

    def commit(self) -> None: ...
    def rollback(self) -> None: ...


_SIDES = "perfledger_side_transactions"


def join_write(conn: Connection, side: SideTransaction) -> None:
    """Commit `side` with the write transaction open on `conn` (see SideTransaction)."""
    conn.info[_SIDES].append(side)


def sides_of(conn: Connection) -> list[SideTransaction]:
    """The side transactions the write open on `conn` spans so far."""
    return conn.info.get(_SIDES, [])  # type: ignore[no-any-return]


def block_answers() -> dict[tuple[Any, ...], Any] | None:
    """The current `reading()` block's remembered answers (emptied at any write of the block); None outside one."""
    now = _READING.get()
    return None if now is None else now.answers


@contextmanager
def files_uncapped() -> Iterator[None]:
    """This process's file-size limit (RLIMIT_FSIZE's soft limit) lifted to its hard limit inside the block: an
    upload's worker caps the files it writes (an archive's members, its spools), never the store's own file, which
    may be larger than any upload and is written at any offset. A process without a soft limit is left as it is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == hard:
        yield
        return
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def _shared(now: _Reading, engine: Engine) -> Iterator[Connection]:
    """The block's connection to `engine`, opened at its first read; a failed read drops it (a failed statement
    leaves PostgreSQL's transaction unusable), so the next read starts afresh."""
    if engine not in now.connections:
        now.connections[engine] = _read_connection(engine)
    conn = now.connections[engine]
    try:
        with translated(engine):
            yield conn
    except Exception:
        now.close()
        raise


def _connect(engine: Engine, *, write: bool) -> Connection:
    """A new connection, retrying while the DuckDB file is held, up to `lock_wait_s`; a writer says it waits.

    A reader of a DuckDB file opens it read-only (see `reading_files.opens_read_only`)."""
    wait_s = load_settings().lock_wait_s
    deadline = time.monotonic() + wait_s
    delay, told = 0.01, False
    token = OPENING_TO_READ.set(not write and opens_read_only(engine))
    try:
        while True:
            try:
                with translated(engine):
                    return engine.connect()
            except StoreBusy as busy:
                if time.monotonic() + delay > deadline:
                    raise
                if write and not told:
                    say_waiting(busy.url, busy.holder, wait_s)
                    told = True
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
    finally:
        OPENING_TO_READ.reset(token)


_SWEPT: set[str] = set()  # the stores this process has written to once (the sweep committed)
_CURRENT: set[str] = set()  # the stores this process found up to this release's schema


def _read_connection(engine: Engine) -> Connection:
    """A connection to read from; a store of an earlier release is first upgraded (a page would read a column it
    lacks) by this process's first write, empty. The check reads on the connection the read then uses."""
    conn = _connect(engine, write=False)
    if _store_key(engine) in _CURRENT:
        return conn
    with translated(engine):
        behind = upgrade_pending(conn)
    if behind and load_settings().read_only:  # left as it is: a page it lacks a column for says BEHIND
        return conn
    if behind:
        conn.close()
        hand_over()
        with connection(engine, write=True):
            pass
        conn = _connect(engine, write=False)
    _CURRENT.add(_store_key(engine))
    return conn


def _store_key(engine: Engine) -> str:  # a DuckLake store apart from its ledger opened plainly
    return str(engine.url) if (lake := lake_of(engine)) is None else lake.shown


def _sweep(engine: Engine, conn: Connection) -> None:
    """On this process's first write to a store: what killed processes left (see `leftovers`) is removed (the
    columns of an older release were widened just before, see `upgrade`)."""
    if is_duckdb(engine):
        remove_orphan_rows(conn)
    elif lake_of(engine) is None:
        refuse_plain_opening(conn, mask_url(str(engine.url)))
    remove_dead_spools()
