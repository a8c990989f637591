"""Every column of a claims file is kept: layout columns read as such, any other one a named attribute
of the row's configuration, the printed precision beside the canonical one, both ends of a printed range."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa

from ingest.pipeline import ingest_bytes
from perfledger import schema, store
from perfledger.records import LATE_RESULT_FIELDS
from perfledger.views.audit import AuditView, table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claims"
HEADER = "source_id,locator,metric,value,unit,model,accelerator,n_devices,precision,tp,pp,Activation checkpointing\n"


def mine(engine: store.Engine) -> pl.DataFrame:
    return store.results(engine).filter(pl.col("source_id") == "titan").sort("id")


def test_layout_columns_are_read_and_any_other_column_is_a_named_attribute(seeded: store.Engine) -> None:
    text = HEADER + "titan,line 10,tokens/s/GPU,2904,tokens/s/GPU,llama3-8b,a100-80gb,64,Float8,2,4,selective layer\n"
    ingest_bytes(seeded, text.encode(), "c.csv")
    row = mine(seeded).row(0, named=True)
    assert (row["tp"], row["pp"], row["precision"], row["precision_as_printed"]) == (2, 4, "fp8", "Float8")
    assert json.loads(row["attributes"]) == {"Activation checkpointing": "selective layer"}


def test_rows_differing_only_in_an_attribute_are_two_configurations_and_each_mfu_uses_its_own(
        seeded: store.Engine) -> None:
    # torchtitan: "selective layer" 2904 WPS 56.8%, "selective op" 2973 WPS 58.2%, Llama 3 8B on 64 A100
    rows = [("line 10", "2904", "56.8", "selective layer"), ("line 11", "2973", "58.2", "selective op")]
    body = "".join(f"titan,{loc},tokens/s/GPU,{wps},tokens/s/GPU,llama3-8b,a100-80gb,64,bf16,,,{ac}\n"
                   f"titan,other {loc},mfu,{mfu},%,llama3-8b,a100-80gb,64,bf16,,,{ac}\n" for loc, wps, mfu, ac in rows)
    ingest_bytes(seeded, (HEADER + body).encode(), "c.csv")
    audit = table(AuditView(sources=("titan",)), seeded).filter(pl.col("metric") == "mfu").sort("reported")
    stored = mine(seeded).filter(pl.col("metric") == "tokens_per_s_per_device").sort("value")
    assert audit["inputs"].to_list() == [f"result {i} (titan, line {n})" for i, n in zip(stored["id"], (10, 11),
                                                                                           strict=True)]


def test_both_ends_of_a_printed_range_are_kept_and_a_reimport_changes_nothing(seeded: store.Engine) -> None:
    text = HEADER + ("titan,p. 3,mfu,33,%,llama3-8b,a100-80gb,64,bf16,,,\n"
                     "titan,p. 3,mfu,39,%,llama3-8b,a100-80gb,64,bf16,,,\n")
    first = ingest_bytes(seeded, text.encode(), "c.csv")
    assert first.imported == "2 added, 0 updated, 0 unchanged"
    assert sorted(mine(seeded)["value"].to_list()) == [0.33, 0.39]
    again = ingest_bytes(seeded, text.encode(), "c.csv")
    assert again.imported == "0 added, 0 updated, 2 unchanged"


def test_a_store_made_before_the_attribute_columns_gains_them_on_init(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'old.duckdb'}")
    before = sa.MetaData()
    sa.Table("result", before, *(c._copy() for c in schema.result.columns if c.name not in LATE_RESULT_FIELDS))
    before.create_all(engine)
    store.init_store(engine, Path(__file__).parents[2] / "data")
    columns = {c["name"] for c in sa.inspect(engine).get_columns(schema.result.name)}
    assert {"attributes", "precision_as_printed"} <= columns


@pytest.mark.parametrize("name", ["maxtext_v5p.csv", "torchtitan_performance.csv", "megatron_moe_zoo_qwen3.csv"])
def test_every_printed_column_of_a_published_table_is_stored(seeded: store.Engine, name: str) -> None:
    ingest_bytes(seeded, (FIXTURES / name).read_bytes(), name)
    stored = store.results(seeded).filter(pl.col("source_id").str.contains("maxtext|torchtitan|megatron"))
    assert stored.height > 0
    assert stored["attributes"].null_count() < stored.height
