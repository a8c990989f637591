"""`store.reading()`: one page render's reads share one connection and ask no select twice, writes inside it are
seen by the reads after them, and the DuckDB file is free again when it ends.

Tests taking `seeded_store` run once per backend (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.errors import StoreError
from perfledger.store.engine import hand_over
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


@contextmanager
def counted(engine: Engine, event: str) -> Iterator[list[object]]:
    """Every `event` (SQLAlchemy's "connect", "before_cursor_execute") the engine fires inside the block."""
    seen: list[object] = []

    def record(*args: object, **kwargs: object) -> None:
        seen.append(args[0])

    sa.event.listen(engine, event, record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, event, record)


def read_like_a_page(engine: Engine) -> None:
    store.has_data(engine)
    store.results(engine, metric="tokens_per_s_per_device")
    store.catalog(engine)
    store.sources(engine)
    store.runs(engine)


def test_a_pages_reads_in_one_block_open_one_connection(seeded_store: Engine) -> None:
    with counted(seeded_store, "connect") as apart:
        read_like_a_page(seeded_store)
    with counted(seeded_store, "connect") as together, store.reading():
        read_like_a_page(seeded_store)
    assert len(apart) >= 5
    assert len(together) == 1


def test_a_select_asked_again_in_the_block_is_answered_from_the_first_answer(seeded_store: Engine) -> None:
    with store.reading():
        first = store.results(seeded_store, metric="tokens_per_s_per_device")
        with counted(seeded_store, "before_cursor_execute") as executed:
            again = store.results(seeded_store, metric="tokens_per_s_per_device")
            other = store.results(seeded_store, metric="mfu")
    assert again.equals(first)
    assert len(executed) == 1  # only the select with other parameters
    assert set(other["metric"].to_list()) == {"mfu"}


def test_a_write_inside_the_block_is_seen_by_the_reads_after_it(seeded_store: Engine) -> None:
    with store.reading():
        before = store.runs(seeded_store).height
        outcome = ingest_path(seeded_store, MEGATRON)
        after = store.runs(seeded_store)
    assert after.height == before + 1
    assert outcome.run_id in after["id"].to_list()


def test_a_failed_read_does_not_spoil_the_reads_after_it(seeded_store: Engine) -> None:
    """A failed statement leaves a PostgreSQL transaction refusing every later one until it is rolled back."""
    missing: sa.Select[Any] = sa.select(sa.column("x")).select_from(sa.table("no_such_table"))
    with store.reading():
        with pytest.raises(StoreError):
            store.query(seeded_store, missing)
        assert store.results(seeded_store, metric="mfu").height > 0


def empty_duckdb_store(tmp_path: Path) -> tuple[Engine, Callable[[], subprocess.CompletedProcess[str]]]:
    """A DuckDB store, and a call that has another process open its file for writing."""
    db = tmp_path / "store.duckdb"
    engine = store.engine_from_url(f"duckdb:///{db}")
    store.create_schema(engine)
    command = [sys.executable, "-c", f"import duckdb; duckdb.connect({str(db)!r}).close()"]
    return engine, lambda: subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)


def test_the_duckdb_file_is_free_for_another_process_after_the_block(tmp_path: Path) -> None:
    engine, open_for_writing = empty_duckdb_store(tmp_path)
    with store.reading():
        store.results(engine)
        held = open_for_writing()
    freed = open_for_writing()
    assert held.returncode != 0 and "lock" in held.stderr.lower()
    assert freed.returncode == 0, freed.stderr


def test_handing_over_inside_the_block_frees_the_file_and_reads_go_on(tmp_path: Path) -> None:
    """The upload's worker process opens the store while the page's render is still in its block."""
    engine, open_for_writing = empty_duckdb_store(tmp_path)
    with store.reading():
        store.results(engine)
        hand_over()
        child = open_for_writing()
        assert store.results(engine).height == 0
    assert child.returncode == 0, child.stderr
