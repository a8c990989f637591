"""A correction of a run's identity on both engines: one transaction writing the correction rows, the configuration
with the field's provenance, and every result row of the run re-identified; a store made before corrections gains the
table at its first write; deleting the run deletes its corrections."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import sqlalchemy as sa

from ingest import pipeline
from ingest.corrections import correct
from perfledger import schema, store
from perfledger.records import RunConfig
from perfledger.store.corrections import corrections
from tests.conftest import LOGS

NEMO = LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
WHEN = datetime(2026, 11, 29, 8, 20, tzinfo=UTC)


def _stored(url: str) -> tuple[store.Engine, int]:
    engine = store.engine_from_url(url)
    unnamed = NEMO.read_bytes().replace(b"name: llama3_8b_", b"name: recipe_")  # the line naming the model, gone
    with pipeline.prepare(unnamed, NEMO.name, RunConfig(), engine=engine, limit=2**30) as prepared:
        return engine, store.save_run(engine, prepared).run_id


def test_a_correction_is_one_write_of_the_run_its_results_and_the_kept_correction(
        new_store_url: Callable[..., str]) -> None:
    engine, run_id = _stored(new_store_url(seeded=True))
    done = correct(engine, run_id, {"model": "llama3-8b", "n_devices": 16}, reason="two nodes", now=WHEN)
    assert [(c.field, c.before, c.after) for c in done.changed] == [("model", None, "llama3-8b"), ("n_devices", 8, 16)]
    row = store.run(engine, run_id)
    assert row is not None and (row.config["model"], row.config["n_devices"]) == ("llama3-8b", 16)
    assert row.config["identity"]["model"] == {"from": "user",
                                              "where": f"correction {done.ids[0]}, 2026-11-29 08:20 UTC: two nodes"}
    assert row.summary is not None and round(row.summary["model_tflops_per_device"] * 2, 1) == 1754.7
    results = store.results(engine, run_id=run_id)
    assert set(results["model_id"].to_list()) == {"llama3-8b"} and set(results["n_devices"].to_list()) == {16}
    kept = corrections(engine, run_id)
    assert kept["corrected_at"].to_list() == [WHEN, WHEN] and kept["reason"].to_list() == ["two nodes"] * 2
    assert correct(engine, run_id, {"n_devices": 16}).changed == ()  # nothing to change: nothing written
    assert corrections(engine, run_id).height == 2
    store.delete_run(engine, run_id)
    assert corrections(engine, run_id).height == 0
    engine.dispose()


def test_a_store_made_before_corrections_gains_the_table_at_its_first_write(
        new_store_url: Callable[..., str]) -> None:
    url = new_store_url("old")
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.begin() as conn:
        schema.metadata.create_all(conn, tables=[t for t in schema.TABLES if t is not schema.correction])
    raw.dispose()
    assert corrections(store.engine_from_url(url)).height == 0  # read before any write: no table, no error
    engine, run_id = _stored(url)  # the first write brings the store up to this schema
    correct(engine, run_id, {"seq_len": 4096}, now=WHEN)
    assert corrections(engine, run_id)["field"].to_list() == ["seq_len"]
    engine.dispose()
