"""The catalog tables in the store: results link on write, unknown names are kept, older stores gain aliases."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import catalog, store
from perfledger.records import ResultRecord

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


def test_a_result_naming_an_unknown_model_is_kept_unlinked_with_its_printed_name(writable_engine: Engine) -> None:
    store.add_results(writable_engine, [
        ResultRecord(metric="mfu", value=0.41, unit="fraction", model_id="Quokka-180B (in-house)", accelerator_id="A100"),
    ])
    row = store.results(writable_engine, metric="mfu").filter(model_as_printed="Quokka-180B (in-house)").row(0, named=True)
    assert row["model_id"] is None  # never a guessed id, never dropped
    assert (row["accelerator_id"], row["accelerator_as_printed"]) == ("a100-80gb", "A100")
    unlinked = store.unlinked_names(writable_engine)
    assert ("model", "Quokka-180B (in-house)") in set(zip(unlinked["kind"], unlinked["printed_name"], strict=True))


def test_storing_the_same_record_after_its_name_was_linked_adds_nothing(writable_engine: Engine) -> None:
    record = ResultRecord(metric="mfu", value=0.4, unit="fraction", model_as_printed="davinci (175B)")
    assert store.add_results(writable_engine, [record]) == 1
    assert store.link_name(writable_engine, "model", "davinci (175B)", "gpt3-175b").rows == 1
    assert store.add_results(writable_engine, [record]) == 0


def test_init_gives_an_older_store_the_aliases_column_and_the_bundled_names(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'old.duckdb'}")
    store.init_store(engine, DATA_DIR)
    with engine.begin() as conn:
        for table in ("model", "accelerator"):
            conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN aliases"))
    store.init_store(engine, DATA_DIR)
    known = store.catalog_record(engine)
    assert catalog.resolve_model("meta-llama/Llama-2-70b-hf", known) == "llama2-70b"
    assert catalog.resolve_accelerator_noted("A100", known)[0] == "a100-80gb"
