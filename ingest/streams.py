"""The byte and frame streams of one ingest: decompression, the size limit and content hash, chunks parsed ahead
on reader threads, step frames gathered into batches."""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import os
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import polars as pl

from perfledger.errors import FileTooLarge, ParseError

GZIP_MAGIC = b"\x1f\x8b"
T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")


def too_large(limit: int) -> str:
    """The size limit's sentence, in the unit PERFLEDGER_MAX_UPLOAD_MB counts (MiB)."""
    return f"larger than the {limit / 2**20:g} MiB limit once decompressed; nothing was stored"


class Limited(io.RawIOBase):
    """Reads through to `inner`, hashing what passes and refusing more than `limit` bytes; `watch`, when given, sees
    every byte that passes too (a second reader of the same pass)."""

    def __init__(self, inner: BinaryIO, file_name: str, limit: int | None,
                 watch: Callable[[bytes], None] | None = None) -> None:
        self.inner = inner
        self.file_name = file_name
        self.limit = limit
        self.watch = watch
        self.count = 0
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.inner.readinto(buffer)  # type: ignore[attr-defined]
        if not n:
            return 0
        self.count += n
        if self.limit is not None and self.count > self.limit:
            raise FileTooLarge(self.file_name, None, too_large(self.limit))
        self.sha.update(memoryview(buffer)[:n])
        if self.watch is not None:
            self.watch(bytes(memoryview(buffer)[:n]))
        return int(n)


def printable(name: str) -> str:
    """A file name as it may be printed or stored: newlines, ANSI escapes and other control or invisible characters
    (and bytes the file system could not decode) written as Python escapes (\\n, \\x1b, \\u202e, \\udcff)."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in name)


def open_regular(path: Path, shown: str) -> BinaryIO:
    """A regular file, opened for reading; anything else (a FIFO, a device, a directory, a socket) is refused at
    once. Checked before opening (opening a FIFO blocks until a writer comes) and again on what was opened
    (without blocking), should the path have changed in between."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ParseError(shown, None, "not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ParseError(shown, None, f"cannot be opened: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ParseError(shown, None, "not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_content(raw: BinaryIO, file_name: str) -> BinaryIO:
    """The decompressed content of a plain or gzip stream."""
    peek = raw.read(2)
    rest = io.BufferedReader(_Prepend(peek, raw))
    if peek == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=rest, mode="rb")  # type: ignore[return-value]
    return rest


class _Prepend(io.RawIOBase):
    def __init__(self, first: bytes, inner: BinaryIO) -> None:
        self.first = first
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.first:
            n = min(len(buffer), len(self.first))
            buffer[:n] = self.first[:n]
            self.first = self.first[n:]
            return n
        return self.inner.readinto(buffer)  # type: ignore[attr-defined, no-any-return]


STEP_BATCH_ROWS = 25_000  # steps per spool file: 100k rows a batch peaked 25 MB higher on the 1 GB Megatron log


def coalesced(frames: Iterator[pl.DataFrame], min_rows: int) -> Iterator[pl.DataFrame]:
    """The frames' rows in order, as frames of at least min_rows (the last may be shorter); none empty."""
    held: list[pl.DataFrame] = []
    rows = 0
    for frame in frames:
        if not frame.height:
            continue
        held.append(frame)
        rows += frame.height
        if rows >= min_rows:
            yield pl.concat(held, how="diagonal_relaxed") if len(held) > 1 else held[0]
            held, rows = [], 0
    if held:
        yield pl.concat(held, how="diagonal_relaxed") if len(held) > 1 else held[0]


READ_AHEAD_WORKERS = 2  # 1 -> 2: 1.17x on the 1 GB Megatron log for +22 MB peak RSS; 3: no faster, +60 MB


def read_ahead(items: Iterator[T], prepare: Callable[[T], U], in_order: Callable[[U], V],
                workers: int = READ_AHEAD_WORKERS) -> Iterator[V]:
    """in_order(prepare(item)) for each item, in order, computed on `workers` threads ahead of the caller.

    Each item goes through three stages on one thread: it is taken from `items` strictly in order (the content
    hash depends on it), prepared in parallel with the other threads' items, then passed to in_order strictly in
    order and one at a time (the parser's stateful part). The caller, meanwhile, writes the previous results to
    the store. Exceptions surface here, in order; after one, later items skip their stages.
    """
    done: Any = object()
    reads, feeds = _Turns(), _Turns()
    stop = threading.Event()

    def run(ticket: int) -> Any:
        prepared: Any
        error: Exception | None
        try:
            with reads.turn(ticket):
                box = [done if stop.is_set() else next(items, done)]
            prepared, error = (done if box[0] is done else prepare(box.pop())), None  # prepare may drop the item
        except Exception as exc:  # noqa: BLE001  # re-raised in its feed turn, so the turns after it still come
            prepared, error = done, exc
        with feeds.turn(ticket):
            if error is not None:
                stop.set()
                raise error
            if prepared is done or stop.is_set():
                return done
            try:
                return in_order(prepared)
            except BaseException:
                stop.set()
                raise

    tickets = itertools.count()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-read") as pool:
        pending = deque(pool.submit(run, next(tickets)) for _ in range(workers))
        try:
            while (value := pending.popleft().result()) is not done:
                pending.append(pool.submit(run, next(tickets)))
                yield value
        finally:
            stop.set()  # the caller stopped early or failed: what is still pending skips its work


class _Turns:
    """Lets numbered tickets (0, 1, 2, ...) through a stage one at a time, in order."""

    def __init__(self) -> None:
        self._next = 0
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, ticket: int) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: self._next == ticket)
            try:
                yield
            finally:
                self._next += 1
                self._changed.notify_all()


