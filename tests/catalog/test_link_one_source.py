"""`catalog link` links one source's rows unless told to link every source, and says how many of which."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import catalog, store
from perfledger.errors import InvalidInput
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
HEADER = "source_id,source_kind,metric,value,unit,model,accelerator,precision,locator\n"


def _table(source: str, value: float, locator: str = "row 1") -> bytes:
    return (HEADER + f"{source},docs,model_tflops_per_device,{value},TFLOP/s/GPU,32B,h100-sxm,bf16,{locator}\n").encode()


def _model_ids(engine: Engine, source: str) -> list[str | None]:
    return store.results(engine).filter(pl.col("source_id") == source)["model_id"].to_list()


def test_the_only_source_printing_a_name_is_linked_and_no_alias_is_made(writable_engine: Engine) -> None:
    ingest_bytes(writable_engine, _table("table_a", 300), "a.csv")
    done = store.link_name(writable_engine, "model", "32B", "qwen3-32b")
    assert (done.rows, done.sources, done.aliased) == (1, ("table_a",), False)
    assert _model_ids(writable_engine, "table_a") == ["qwen3-32b"]
    assert catalog.resolve_or_none("model", "32B", store.catalog_record(writable_engine)) is None


def test_a_name_printed_by_two_sources_needs_a_source_or_all_sources(writable_engine: Engine) -> None:
    ingest_bytes(writable_engine, _table("table_a", 300), "a.csv")
    ingest_bytes(writable_engine, _table("table_b", 310), "b.csv")
    with pytest.raises(InvalidInput, match=r"printed in 2 sources \(table_a \(1 rows\), table_b \(1 rows\)\)"):
        store.link_name(writable_engine, "model", "32B", "qwen3-32b")
    one = store.link_name(writable_engine, "model", "32B", "qwen3-32b", source_id="table_b")
    assert (one.rows, one.sources) == (1, ("table_b",))
    assert _model_ids(writable_engine, "table_a") == [None] and _model_ids(writable_engine, "table_b") == ["qwen3-32b"]
    every = store.link_name(writable_engine, "model", "32B", "mcore-gpt-32b", all_sources=True)
    assert (every.rows, every.sources, every.aliased) == (2, ("table_a", "table_b"), True)
    assert "of 2 sources (table_a, table_b)" in every.describe("model", "32B", "mcore-gpt-32b")


def test_a_link_of_one_source_survives_a_corrected_import_of_that_source(writable_engine: Engine) -> None:
    ingest_bytes(writable_engine, _table("table_a", 300), "a.csv")
    store.link_name(writable_engine, "model", "32B", "qwen3-32b")
    again = ingest_bytes(writable_engine, _table("table_a", 301), "a2.csv")  # a correction: the same key, a new value
    assert again.imported == "0 added, 1 updated, 0 unchanged" and again.unlinked == ()
    assert _model_ids(writable_engine, "table_a") == ["qwen3-32b"]


def test_the_cli_says_how_many_rows_of_how_many_sources_it_linked(writable_engine: Engine) -> None:
    ingest_bytes(writable_engine, _table("table_a", 300), "a.csv")
    ingest_bytes(writable_engine, _table("table_b", 310), "b.csv")
    url = str(writable_engine.url)

    def link(*extra: str) -> subprocess.CompletedProcess[str]:
        return run("perfledger", "catalog", "link", "32B", "qwen3-32b", *extra, "--db", url)

    refused = link()
    assert refused.returncode == 2 and "--all-sources" in refused.stderr
    done = link("--source", "table_a")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("linked 1 stored result rows of 1 source (table_a) printed '32B' to model qwen3-32b")
