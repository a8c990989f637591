"""A run's steps read back exactly on both backends, the odd floats and 64-bit steps included, whole and in
batches; on PostgreSQL they come through COPY's CSV, never row by row through the driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import sqlalchemy as sa
from polars.testing import assert_frame_equal
from sqlalchemy import Engine

from ingest.spool import StepSpool
from perfledger import store
from perfledger.records import STEP_SCHEMA, PreparedRun
from perfledger.store.read import write_step_files
from perfledger.vocabulary import LogFormat

ODD = [0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, float("inf"), -float("inf"), None,
       123456789.123456789, 2.0**-1022, 1 / 3]


def expected_steps(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    steps = [*range(1, n - 2), 2**31, 2**40, 2**53]
    columns: dict[str, list[object]] = {"step": steps}
    for i, name in enumerate(c for c in STEP_SCHEMA if c != "step"):
        values: list[object] = (rng.lognormal(0, 3, n) * (-1) ** i).tolist()
        if name == "launch":
            values = [None] * n
        elif i % 3 == 0:
            values[: len(ODD)] = ODD
        columns[name] = values
    return pl.DataFrame(columns, schema=STEP_SCHEMA)


def stored(engine: Engine, frame: pl.DataFrame) -> int:
    spool = StepSpool()
    for part in frame.iter_slices(5_000):
        spool.add(part)
    prepared = PreparedRun(file_name="odd.log", format=LogFormat("megatron"), content_sha256="cd" * 32,
                           file_bytes=1, config={}, summary={}, steps=spool.step_files(), release=spool.close)
    with prepared:
        return store.save_run(engine, prepared).run_id


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Engine]:
    engine = store.engine_from_url(pg_url)
    store.create_schema(engine)
    yield engine
    engine.dispose()


def test_a_runs_steps_read_back_exactly_whole_and_in_batches(store_engine: Engine, tmp_path: Path) -> None:
    expected = expected_steps(12_000)
    run_id = stored(store_engine, expected)
    assert_frame_equal(store.steps(store_engine, run_id), expected)
    files = write_step_files(store_engine, run_id, tmp_path, batch_rows=5_000)
    assert len(files) == 3
    assert_frame_equal(pl.concat([pl.read_parquet(f) for f in files]), expected)


def test_a_runs_steps_on_postgresql_come_through_copy_not_row_by_row(pg_store: Engine, tmp_path: Path) -> None:
    run_id = stored(pg_store, expected_steps(1_000))
    selects: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        selects.append(statement)

    sa.event.listen(pg_store, "before_cursor_execute", seen)
    try:
        assert store.steps(pg_store, run_id).height == 1_000
        assert write_step_files(pg_store, run_id, tmp_path)
    finally:
        sa.event.remove(pg_store, "before_cursor_execute", seen)
    assert [s for s in selects if "FROM step" in s] == []  # the driver's rows would be one Python object a value
