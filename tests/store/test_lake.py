"""DuckLake with a real PostgreSQL catalog and real Parquet files: the extensions load from their packages' files
(nothing downloaded), a real run's steps round-trip, two writer processes at once lose nothing, and a catalog that
cannot be reached is one sentence naming the lake. Skipped where the pinned extension packages are not installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from perfledger.errors import StoreError
from tests.conftest import LOGS, ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None
    or importlib.util.find_spec("duckdb_extension_postgres") is None,
    reason="needs duckdb-extension-ducklake and duckdb-extension-postgres (requirements.txt)")]

STEP_DDL = ("CREATE TABLE IF NOT EXISTS lake.step (run_id INTEGER, step BIGINT, step_time_s DOUBLE, tokens DOUBLE, "
            "loss DOUBLE)")


@pytest.fixture
def lake_url(pg_url: str, tmp_path: Path) -> str:
    rest = pg_url.split("://", 1)[1]
    return f"ducklake+postgresql://{rest}?data_path={tmp_path / 'steps'}"


def test_a_runs_steps_round_trip_through_parquet_under_a_postgresql_catalog(lake_url: str, tmp_path: Path) -> None:
    from ingest.pipeline import prepare
    from perfledger.store.lake import LakeSpec, lake_connection

    with (LOGS / "bigscience_meg_gpt2_perf_n16_v100.out").open("rb") as raw, \
            prepare(raw, "megatron.out") as prepared:
        steps = pl.read_parquet(list(prepared.steps.files)).select("step", "step_time_s", "tokens", "loss")
    lake = LakeSpec.from_url(lake_url)
    with lake_connection(lake) as con:
        con.execute(STEP_DDL)  # type: ignore[attr-defined]
        con.register("steps", steps)  # type: ignore[attr-defined]
        con.execute("INSERT INTO lake.step SELECT 7, * FROM steps")  # type: ignore[attr-defined]
    with lake_connection(lake) as con:  # a new connection: what was committed, read from the files
        back = con.execute("SELECT step, step_time_s, tokens, loss FROM lake.step WHERE run_id = 7 "  # type: ignore[attr-defined]
                           "ORDER BY step").pl()
    assert back.equals(steps.sort("step"))
    assert list((tmp_path / "steps").rglob("*.parquet"))  # the rows live in Parquet files under the data path


def test_two_writer_processes_at_once_lose_no_step(lake_url: str) -> None:
    from perfledger.store.lake import LakeSpec, lake_connection

    with lake_connection(LakeSpec.from_url(lake_url)) as con:
        con.execute(STEP_DDL)  # type: ignore[attr-defined]
    writer = textwrap.dedent("""
        import sys
        from perfledger.store.lake import LakeSpec, lake_connection
        run = int(sys.argv[2])
        for batch in range(10):
            with lake_connection(LakeSpec.from_url(sys.argv[1])) as con:
                con.execute(f"INSERT INTO lake.step SELECT {run}, {batch} * 1000 + i, 1.0, 1.0, 1.0 FROM range(1000) t(i)")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", writer, lake_url, str(run)], cwd=ROOT, stderr=subprocess.PIPE,
                              text=True) for run in (1, 2)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    with lake_connection(LakeSpec.from_url(lake_url)) as con:
        counts = con.execute("SELECT run_id, count(*), count(DISTINCT step) FROM lake.step "  # type: ignore[attr-defined]
                             "GROUP BY 1 ORDER BY 1").fetchall()
    assert counts == [(1, 10_000, 10_000), (2, 10_000, 10_000)]


def test_a_catalog_that_cannot_be_reached_is_one_sentence_naming_the_lake(tmp_path: Path) -> None:
    from perfledger.store.lake import LakeSpec, lake_connection

    lake = LakeSpec.from_url(f"ducklake+postgresql://nobody:secret@127.0.0.1:1/none?data_path={tmp_path}")
    with pytest.raises(StoreError) as caught, lake_connection(lake):
        pass
    said = str(caught.value)
    assert "ducklake+postgresql://nobody:***@127.0.0.1:1/none" in said and "secret" not in said
    assert "\n" not in said
