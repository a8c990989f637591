"""The pipeline reads a file on several threads, yet takes its chunks and feeds the parser strictly in order:
results, line numbers and the content hash are those of one sequential pass."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from polars.testing import assert_frame_equal
from sqlalchemy import Engine

from ingest import pipeline, streams
from ingest.parsers.megatron import MegatronParser
from perfledger import store
from tests.conftest import LOGS


def _jittered(value: int, seed: int) -> int:
    time.sleep(random.Random(seed * 1000 + value).random() / 2000)
    return value * 10


@settings(max_examples=30, deadline=None)
@given(hs.integers(0, 40), hs.integers(1, 4), hs.integers(0, 10_000))
def test_results_come_in_order_whatever_each_item_takes(n: int, workers: int, seed: int) -> None:
    taken: list[int] = []

    def items() -> Iterator[int]:  # reading takes time too, so threads that do not wait their turn would collide
        for i in range(n):
            _jittered(i, seed + 1)
            taken.append(i)
            yield i

    fed: list[int] = []
    feeding = threading.Lock()

    def in_order(value: int) -> int:  # the parser's stateful part: in order, never two at once
        assert feeding.acquire(blocking=False), "two items fed at once"
        try:
            _jittered(value, seed + 2)
            fed.append(value)
            return value + 1
        finally:
            feeding.release()

    out = list(streams.read_ahead(items(), lambda v: _jittered(v, seed), in_order, workers=workers))
    assert out == [i * 10 + 1 for i in range(n)]
    assert taken == list(range(n))
    assert fed == [i * 10 for i in range(n)]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("fails_in", ["reading", "preparing", "feeding"])
def test_an_error_surfaces_after_the_items_before_it(workers: int, fails_in: str) -> None:
    def items() -> Iterator[int]:
        for i in range(10):
            if fails_in == "reading" and i == 6:
                raise ValueError("bad item 6")
            yield i

    def prepare(value: int) -> int:
        if fails_in == "preparing" and value == 6:
            raise ValueError("bad item 6")
        return _jittered(value, 1)

    fed: list[int] = []

    def in_order(value: int) -> int:
        if fails_in == "feeding" and value == 60:
            raise ValueError("bad item 6")
        fed.append(value)
        return value

    seen: list[int] = []
    with pytest.raises(ValueError, match="bad item 6"):
        for value in streams.read_ahead(items(), prepare, in_order, workers=workers):
            seen.append(value)  # noqa: PERF402 (the loop is cut short by the failure)
    assert seen == [i * 10 for i in range(6)]
    assert fed == seen  # nothing after the failure was fed


def test_a_file_read_in_many_small_chunks_stores_the_same_run_and_hash(
        writable_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    log = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
    raw = log.read_bytes()
    whole = pipeline.preview(raw, log.name)
    monkeypatch.setattr(MegatronParser, "chunk_bytes", 4096)  # about 300 chunks through the reader threads
    outcome = pipeline.ingest_path(writable_engine, Path(log))
    assert outcome.created and outcome.steps == whole.steps > 100
    assert store.find_run(writable_engine, hashlib.sha256(raw).hexdigest()) == outcome.run_id
    stored = store.steps(writable_engine, outcome.run_id)
    ours, once = outcome.summary.steady_state_json(), whole.summary.steady_state_json()
    assert ours.keys() == once.keys()
    for key, value in once.items():  # sums over other chunk boundaries may differ in the last bit
        assert ours[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    assert outcome.problems == whole.problems
    assert_frame_equal(stored, store.steps(writable_engine, pipeline.ingest_bytes(
        writable_engine, raw + b"\n", "same-plus-newline.out").run_id))
