"""A store whose steps live in a DuckLake (ledger and catalog in a real PostgreSQL, steps in real Parquet files):
a run's steps are written, read, deleted and copied through the lake, two ingests at once lose nothing, and a data
path that cannot be written is one sentence with nothing stored. The store tests of tests/store run on such a store
too with PERFLEDGER_TEST_DUCKLAKE=1 (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.errors import StoreError
from perfledger.store.lake import LakeSpec
from perfledger.store.lake_steps import count_steps, staged
from tests.cli_runner import run
from tests.conftest import LOGS, ROOT, lake_url

pytestmark = [pytest.mark.postgres, pytest.mark.ducklake, pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None
    or importlib.util.find_spec("duckdb_extension_postgres") is None,
    reason="needs duckdb-extension-ducklake and duckdb-extension-postgres (requirements.txt)")]

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
OTHER = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"


@pytest.fixture
def lake_store(pg_url: str, tmp_path: Path) -> str:
    """The URL of a new DuckLake store with its tables (no data/ rows: the lake is what is tested)."""
    url = lake_url(pg_url, tmp_path / "steps")
    store.create_schema(store.engine_from_url(url))
    return url


def ledger_tables(pg_url: str) -> list[str]:
    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        return sa.inspect(conn).get_table_names()


def ingest_cli(path: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ingest", str(path), "--db", url, "--json"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def test_a_runs_steps_live_in_parquet_under_the_lake_and_read_as_in_a_duckdb_store(
        lake_store: str, pg_url: str, tmp_path: Path) -> None:
    lake, plain = store.engine_from_url(lake_store), store.engine_from_url(f"duckdb:///{tmp_path / 'plain.duckdb'}")
    store.create_schema(plain)
    run_id = ingest_path(lake, MEGATRON).run_id
    plain_id = ingest_path(plain, MEGATRON).run_id
    assert run_id is not None and plain_id is not None
    assert store.steps(lake, run_id).equals(store.steps(plain, plain_id))
    assert store.step_times(lake, run_id).equals(store.step_times(plain, plain_id))
    assert store.counts(lake)["step"] == store.counts(plain)["step"] > 0
    assert list((tmp_path / "steps").rglob("*.parquet"))
    assert "step" not in ledger_tables(pg_url)  # the ledger's database has no step table of its own
    assert store.delete_run(lake, run_id)
    assert store.counts(lake)["step"] == 0 and store.steps(lake, run_id).is_empty()


def test_two_ingest_processes_at_once_into_one_lake_lose_no_step(lake_store: str) -> None:
    procs = [ingest_cli(path, lake_store) for path in (MEGATRON, OTHER)]
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    results = [(rc, out, err) for out, err, rc in results]
    assert [rc for rc, _, _ in results] == [0, 0], [err for _, _, err in results]
    outcomes = [json.loads(out) for _, out, _ in results]
    assert all(o["created"] for o in outcomes)
    engine = store.engine_from_url(lake_store)
    assert store.counts(engine)["run"] == 2
    assert store.counts(engine)["step"] == sum(o["steps"] for o in outcomes) > 0
    for outcome in outcomes:
        assert store.steps(engine, outcome["run_id"]).height == outcome["steps"]


def test_a_data_path_that_cannot_be_written_is_one_sentence_and_stores_nothing(pg_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "steps"
    url = lake_url(pg_url, folder)
    store.create_schema(store.engine_from_url(url))
    folder.mkdir(exist_ok=True)
    folder.rmdir()
    folder.write_text("a file where the steps' folder should be\n")  # unwritable even for root
    proc = ingest_cli(MEGATRON, url)
    err = proc.communicate(timeout=300)[1]
    rc = proc.returncode
    assert rc == 1 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and str(folder) in err, err
    engine = store.engine_from_url(url)
    assert store.counts(engine)["run"] == 0 and store.counts(engine)["step"] == 0
    folder.unlink()  # the folder back: the same file stores, nothing half-written in the way
    assert ingest_path(engine, MEGATRON).created


def test_an_unreachable_ledger_and_catalog_is_one_sentence_without_the_password(tmp_path: Path) -> None:
    url = f"ducklake+postgresql://nobody:secret@127.0.0.1:1/none?data_path={tmp_path}"
    done = run("perfledger", "export", "runs", "", "--db", url)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "secret" not in done.stderr, done.stderr
    with pytest.raises(StoreError) as caught:
        count_steps(LakeSpec.from_url(url))
    assert "nobody:***@127.0.0.1:1" in str(caught.value) and "secret" not in str(caught.value)


def test_a_lakes_ledger_opened_as_plain_postgresql_refuses_to_write(lake_store: str, pg_url: str) -> None:
    with pytest.raises(StoreError, match="keeps its steps in a DuckLake"):
        ingest_path(store.engine_from_url(pg_url), MEGATRON)


def test_a_plain_postgresql_store_opened_as_a_lake_is_refused(pg_url: str, tmp_path: Path) -> None:
    store.create_schema(store.engine_from_url(pg_url))
    with pytest.raises(StoreError, match="copy the store into a new database"):
        store.create_schema(store.engine_from_url(lake_url(pg_url, tmp_path / "steps")))


def test_init_sweeps_steps_whose_run_was_never_stored(lake_store: str) -> None:
    """A writer killed between the lake's commit and the ledger's leaves steps no run row holds."""
    engine = store.engine_from_url(lake_store)
    run_id = ingest_path(engine, MEGATRON).run_id
    kept = store.counts(engine)["step"]
    lake = LakeSpec.from_url(lake_store)
    with store.engine.connection(engine, write=True) as conn:
        side = staged(conn, lake)
        side.cursor.execute(f"INSERT INTO {side.table} (run_id, step) SELECT 999, i FROM range(50) t(i)")
    assert count_steps(lake) == kept + 50
    store.init_store(engine, ROOT / "data")
    assert count_steps(lake) == kept and store.steps(engine, run_id or 0).height == kept


def test_a_store_copied_into_a_lake_and_back_keeps_its_steps(lake_store: str, pg_url: str, tmp_path: Path) -> None:
    src = store.engine_from_url(f"duckdb:///{tmp_path / 'src.duckdb'}")
    store.create_schema(src)
    run_ids = [ingest_path(src, path).run_id or 0 for path in (MEGATRON, OTHER)]
    store.drop_schema(store.engine_from_url(lake_store))  # copy makes the tables of an empty store
    lake = store.engine_from_url(lake_store)
    assert store.copy_store(src, lake) == store.counts(src)
    back = store.engine_from_url(f"duckdb:///{tmp_path / 'back.duckdb'}")
    assert store.copy_store(lake, back) == store.counts(src)
    for run_id in run_ids:
        assert store.steps(lake, run_id).equals(store.steps(src, run_id))
        assert store.steps(back, run_id).equals(store.steps(src, run_id))
    assert store.counts(store.engine_from_url(pg_url))["run"] == 2  # the ledger is in the PostgreSQL database
