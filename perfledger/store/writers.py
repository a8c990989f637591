"""Writers to one DuckDB file take turns: a queue on a lock file beside it, so they wait instead of failing.

DuckDB lets one process open a file at a time, and a connection that finds it held can only retry. Eight ingests
retrying at once left half of them "busy" after the lock wait and a reader waiting 13 s among them. Here a
writer first takes `<file>.writers` (an exclusive flock, which the kernel drops when its process dies, kill -9
included), so only one writer at a time competes with the readers for the file itself. The wait for a turn is
bounded: `lock_wait_s` without the queue moving (the holder does not change), and WRITER_QUEUE_ROUNDS times
that in all. A writer that waits says so once on stderr, naming the PID ahead of it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from perfledger.errors import DiskFull, StoreBusy, StoreError
from perfledger.settings import load_settings

WRITER_QUEUE_ROUNDS = 30  # a writer waits at most this many lock waits for its turn in all (default 300 s)
POLL_S = 0.02
# A writer whose turn came from another writer lets this pass before it opens the file: a reader retrying
# meanwhile (every RETRY_MAX_S at most, as a writer with its turn) gets in between, so a queue of writers
# cannot starve it.
HANDOVER_GAP_S = 0.1
RETRY_MAX_S = 0.05

_held = threading.local()  # the lock files this thread holds a turn on: a nested write does not queue again


def lock_path(engine: Engine) -> Path | None:
    """The queue's lock file of a DuckDB file store; None for PostgreSQL or an in-memory DuckDB."""
    if engine.dialect.name != "duckdb":
        return None
    database = engine.url.database
    if database in (None, "", ":memory:") or database.startswith(":memory:"):
        return None
    return Path(database).with_name(Path(database).name + ".writers")


@contextmanager
def writer_turn(engine: Engine, masked_url: str) -> Iterator[None]:
    """Hold this process's turn to write to the store (a no-op where writers need no queue)."""
    path = lock_path(engine)
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if path is None or str(path) in held:
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only volume or folder: say so, and how such a store can still be served
        raise StoreError(masked_url, f"the writers' lock file {path} cannot be created ({exc.strerror}); a store "
                                     "on a read-only volume can be served with PERFLEDGER_READ_ONLY=1") from None
    try:
        waited = _take(fd, masked_url)
        _write_pid(fd, path, masked_url)
        if waited:
            time.sleep(HANDOVER_GAP_S)
        held.add(str(path))
        try:
            yield
        finally:
            held.discard(str(path))
    finally:
        os.close(fd)  # releases the flock


def _write_pid(fd: int, path: Path, masked_url: str) -> None:
    """This process's PID in the lock file, for the messages of writers waiting behind it."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DiskFull(masked_url, str(path.resolve().parent)) from None
        raise StoreError(masked_url, f"the writers' lock file {path} cannot be written ({exc.strerror})") from None


def _take(fd: int, masked_url: str) -> bool:
    """Block until the flock is ours; whether another writer held it first. StoreBusy past the bound."""
    wait_s = load_settings().lock_wait_s
    started = time.monotonic()
    holder, since, told = None, started, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return holder is not None
        except BlockingIOError:
            pass
        now_holder = _holder(fd)
        if holder is None or now_holder != holder:
            holder, since = now_holder, time.monotonic()
        now = time.monotonic()
        if now - since > wait_s or now - started > wait_s * WRITER_QUEUE_ROUNDS:
            raise StoreBusy(masked_url, f"{holder} (queue of writers)")
        if not told:
            say_waiting(masked_url, holder, wait_s)
            told = True
        time.sleep(POLL_S)


def _holder(fd: int) -> str:
    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"PID {pid}" if pid.isdigit() else "another writer"


_told: set[str] = set()  # the stores this process said it waits for


def say_waiting(masked_url: str, holder: str, wait_s: int) -> None:
    """One line on stderr, once per process and store: a command-line writer's user sees why nothing happens
    yet; a server logs it."""
    if masked_url in _told:
        return
    _told.add(masked_url)
    print(f"waiting for the store: held by {holder} (giving up after {wait_s} s without progress)",
          file=sys.stderr, flush=True)
