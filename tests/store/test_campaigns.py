"""Campaigns in the store: written whole or not at all, the same folder twice stored once, and a store made before
campaigns existed given their tables at its first write, its runs kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from ingest.campaign import import_folder, plan_folder
from ingest.pipeline import ingest_path
from perfledger import schema, store
from perfledger.errors import PerfledgerError

CAMPAIGNS = Path(__file__).parents[1] / "fixtures" / "campaigns"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
SWEEP = CAMPAIGNS / "bigscience_gpt2_meg_base_sweep"
MAIN_TABLES = tuple(t for t in schema.TABLES if t not in schema.CAMPAIGN_TABLES)  # the tables before campaigns


def test_a_campaign_stores_its_runs_and_outcomes_and_lists_its_run_ids(new_store_url: Callable[..., str]) -> None:
    engine = store.engine_from_url(new_store_url("c"))
    store.create_schema(engine)
    done = import_folder(engine, SWEEP)
    assert done.saved is not None and done.saved.created
    assert store.campaign_run_ids(engine, done.saved.campaign_id) == list(done.saved.run_ids)
    assert len(done.saved.run_ids) == 5
    outcomes = store.outcomes(engine, done.saved.campaign_id)
    assert store.outcome_counts(outcomes) == {"cancelled": 4, "timeout": 1}
    listed = store.campaigns(engine).row(0, named=True)
    assert (listed["name"], listed["attempts"], listed["runs"], listed["failed"]) == (SWEEP.name, 5, 5, 5)


def test_the_same_folder_imported_twice_is_one_campaign(new_store_url: Callable[..., str]) -> None:
    engine = store.engine_from_url(new_store_url("twice"))
    store.create_schema(engine)
    first = import_folder(engine, MLPERF).saved
    again = import_folder(engine, MLPERF).saved
    assert first is not None and again is not None
    assert (again.campaign_id, again.created, again.run_ids) == (first.campaign_id, False, first.run_ids)
    assert store.counts(engine)["campaign"] == 1 and store.counts(engine)["run"] == 10


def test_a_campaign_that_fails_halfway_leaves_nothing_stored(new_store_url: Callable[..., str]) -> None:
    engine = store.engine_from_url(new_store_url("half"))
    store.create_schema(engine)
    plan = plan_folder(MLPERF)
    broken = plan.attempts[6].prepared
    assert broken is not None
    broken.close()  # its step files are gone: the seventh run cannot be written
    try:
        with pytest.raises((PerfledgerError, OSError)):  # DuckDB reads the file itself; PostgreSQL via Polars
            store.save_campaign(engine, plan)
    finally:
        plan.close()
    counts = store.counts(engine)
    assert (counts["campaign"], counts["outcome"], counts["run"], counts["step"]) == (0, 0, 0, 0)


def test_a_store_made_before_campaigns_gets_their_tables_at_its_first_write_and_keeps_its_runs(
        new_store_url: Callable[..., str], tmp_path: Path, backend: str) -> None:
    if backend == "ducklake":
        pytest.skip("a DuckLake store is newer than campaigns: there is no such store to bring up to date")
    url = new_store_url("old")
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.begin() as conn:
        schema.metadata.create_all(conn, tables=list(MAIN_TABLES))
    raw.dispose()
    engine = store.engine_from_url(url)
    assert store.campaigns(engine).is_empty() and store.counts(engine)["campaign"] == 0  # reads before any write
    old = ingest_path(engine, SWEEP / "meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out")
    done = import_folder(engine, SWEEP)
    assert done.saved is not None and old.run_id in done.saved.run_ids  # the run stored before is the same run
    assert store.run(engine, old.run_id or 0) is not None
    assert store.counts(engine)["run"] == 5 and store.counts(engine)["outcome"] == 5


def test_deleting_a_run_keeps_its_outcome_without_the_run(new_store_url: Callable[..., str]) -> None:
    engine = store.engine_from_url(new_store_url("del"))
    store.create_schema(engine)
    done = import_folder(engine, SWEEP).saved
    assert done is not None
    assert store.delete_run(engine, done.run_ids[0])
    outcomes = store.outcomes(engine, done.campaign_id)
    assert outcomes.height == 5 and outcomes["run_id"].null_count() == 1


def test_the_campaign_list_reads_the_same_on_both_engines(new_store_url: Callable[..., str]) -> None:
    engine = store.engine_from_url(new_store_url("list"))
    store.create_schema(engine)
    import_folder(engine, SWEEP)
    listed = store.campaigns(engine)
    assert listed.schema["failed"] == listed.schema["runs"] == listed.schema["attempts"]
    assert listed.drop("imported_at").row(0) == (1, SWEEP.name, "sweep", 5, 5, 5, pytest.approx(183.988, rel=1e-5),
                                                 "tokens/s/device", listed["score_rule"][0], listed["score_note"][0])
