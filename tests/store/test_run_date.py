"""A run keeps the date it ran, read from its log; a store made before the run date existed gains the column in
place at its first write, keeping its runs (dated by their ingest, and saying so)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import sqlalchemy as sa

from ingest.pipeline import ingest_path
from perfledger import store, views
from perfledger.views.history import FROM_INGEST, FROM_LOG
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
NEMO = LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"  # prints "2025-06-11 23:59:27" (wget) first
MLPERF = LOGS / "amd_mi355x_llama31_8b_v5.1_result_0.txt"  # first MLLOG event: time_ms 1759966201037


def made_before_the_run_date(url: str) -> int:
    """A store as the release before this column made it, holding one ingested run: the column dropped again."""
    engine = store.engine_from_url(url)
    store.create_schema(engine)
    old = ingest_path(engine, NEMO)
    engine.dispose()
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE run DROP COLUMN ran_at")
    raw.dispose()
    assert old.run_id is not None
    return old.run_id


def run_columns(url: str) -> set[str]:
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.connect() as conn:
        names = {c["name"] for c in sa.inspect(conn).get_columns("run")}
    raw.dispose()
    return names


def test_an_older_store_gains_the_run_date_at_its_first_write_and_keeps_its_runs(
        new_store_url: Callable[..., str]) -> None:
    url = new_store_url("old")
    old_run = made_before_the_run_date(url)
    assert "ran_at" not in run_columns(url)
    reader = store.engine_from_url(url)  # reads (a read-only server's) work before any write, as undated runs
    assert store.run(reader, old_run).ran_at is None  # type: ignore[union-attr]
    assert b",ingest (the log printed no date)," in views.export("history", "", reader)
    reader.dispose()
    env = os.environ | {"PERFLEDGER_DB_URL": url}  # a fresh process: its first write
    done = run("ingest", str(MLPERF), "--json", env=env, check=True)
    new_run = int(json.loads(done.stdout.splitlines()[0])["run_id"])
    assert "ran_at" in run_columns(url)
    engine = store.engine_from_url(url)
    kept, added = store.run(engine, old_run), store.run(engine, new_run)
    assert kept is not None and kept.file_name == NEMO.name and kept.ran_at is None
    assert added is not None and added.ran_at == datetime(2025, 10, 8, 23, 30, 1, 37_000, tzinfo=UTC)
    dated = pl.read_csv(io.BytesIO(views.export("history", "y=step_time_s", engine)))
    assert dict(zip(dated["run id"], dated["date from"], strict=True)) == {old_run: FROM_INGEST, new_run: FROM_LOG}
    engine.dispose()


def test_a_log_without_a_printed_date_is_dated_by_its_ingest(tmp_path: Path) -> None:
    log = tmp_path / "undated.log"  # Megatron iteration lines only: no date anywhere
    log.write_text("".join(f" iteration {s:>8}/ 100 | consumed samples: {s * 8} | elapsed time per iteration (ms): "
                           f"1000.0 | learning rate: 1.000E-04 | global batch size:     8 | lm loss: 2.5E+00 |\n"
                           for s in range(1, 41)))
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 's.duckdb'}")
    store.create_schema(engine)
    outcome = ingest_path(engine, log)
    assert outcome.run_id is not None
    run = store.run(engine, outcome.run_id)
    assert run is not None and run.ran_at is None


def test_an_older_store_copies_whole_before_its_first_write(new_store_url: Callable[..., str],
                                                            tmp_path: Path) -> None:
    source = new_store_url("old")
    old_run = made_before_the_run_date(source)
    target = store.engine_from_url(f"duckdb:///{tmp_path / 'copy.duckdb'}")
    copied = store.copy_store(store.engine_from_url(source), target)
    assert copied["run"] == 1 and copied["step"] > 0
    assert store.run(target, old_run).ran_at is None  # type: ignore[union-attr]
