"""Computations remembered by the content of their arguments, or until the store is written to.

The audit of every stored claim (52,329 on the 1,000-run bench store) takes a second or more of Python, and each
visit of the Audit page, and each page that carries the audit's warnings, asked it again of the same rows. A
remembered call is keyed by what its frames hold (their schema, height and every row's hash), never by where they
came from, so a changed, added or removed row, or a new catalog entry, is a new key: nothing here can go stale.

A page's table is remembered by the store it was read from: its URL and write stamp (perfledger.store.stamp),
which every write by any process sets anew. A page render then reads one row to know it, instead of reading and
computing its table again (0.2-0.5 s a render on the 1,000-run store).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, ParamSpec, TypeVar

import polars as pl
from sqlalchemy import Engine

from perfledger import store

P = ParamSpec("P")
R = TypeVar("R")
_MEMORIES: list[OrderedDict[Hashable, Any]] = []  # every remembered function's answers, for `forget`


def forget() -> None:
    """Drop every remembered answer (the benchmark times the computation itself, not the memory)."""
    for answers in _MEMORIES:
        answers.clear()


def content_key(value: Any) -> Hashable:
    """A frame as a digest of its schema, height and rows in order (128 bits of hash a row); any other argument
    must be hashable itself."""
    if isinstance(value, pl.DataFrame):
        digest = hashlib.blake2b(repr(value.schema).encode(), digest_size=20)
        digest.update(value.height.to_bytes(8, "little"))
        for seed in (0, 1) if value.width else ():  # two 64-bit hashes a row
            digest.update(value.hash_rows(seed=seed).to_numpy().tobytes())
        return ("frame", digest.hexdigest())
    hash(value)  # an unhashable argument fails here, not as a silently missed cache
    key: Hashable = value
    return key


class _Memory(Generic[R]):
    """The last `keep` answers of one function, by key, shared by every session's thread of the server."""

    def __init__(self, keep: int) -> None:
        self.keep, self.answers, self.lock = keep, OrderedDict[Hashable, R](), threading.Lock()
        _MEMORIES.append(self.answers)

    def answer(self, key: Hashable, compute: Callable[[], R]) -> R:
        with self.lock:
            if key in self.answers:
                self.answers.move_to_end(key)
                return self.answers[key]
        found = compute()  # outside the lock: another key's computation need not wait for this one
        with self.lock:
            self.answers[key] = found
            while len(self.answers) > self.keep:
                self.answers.popitem(last=False)
        return found


def by_content(keep: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Remember the last `keep` results of a pure function of frames and hashable values (shared by every
    session of the server; frames are never changed in place, so callers may share one)."""

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        memory = _Memory[R](keep)

        @functools.wraps(func)
        def remembered(*args: P.args, **kwargs: P.kwargs) -> R:
            key = (tuple(content_key(a) for a in args), tuple((k, content_key(v)) for k, v in sorted(kwargs.items())))
            return memory.answer(key, lambda: func(*args, **kwargs))

        return remembered

    return wrap


def until_written(keep: int) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Remember the last `keep` answers of func(*args, engine), a function of the store and hashable arguments
    (shared by every session of the server), until the store is written to (its write stamp changes); a store
    without a stamp (made before them, not written to since) is read afresh each time."""

    def wrap(func: Callable[..., R]) -> Callable[..., R]:
        memory = _Memory[R](keep)

        @functools.wraps(func)
        def remembered(*args: Any) -> R:
            engine: Engine = args[-1]
            stamp = store.write_stamp(engine)
            if stamp is None:
                return func(*args)
            key = (engine.url.render_as_string(hide_password=False), stamp, *map(content_key, args[:-1]))
            return memory.answer(key, lambda: func(*args))

        return remembered

    return wrap
