"""A claims cell kept as printed (a value that is not a number) is a row every page shows or passes over, never a
figure: its permalink says so, and Head to head never pairs it."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest.pipeline import ingest_bytes
from perfledger import store

TABLE = ("source_id,locator,metric,value,unit,model,accelerator,precision\n"
         "na_table,l1,tokens/s/GPU,N/A,,llama2-7b,h100-sxm,bf16\n"
         "na_table,l2,tokens/s/GPU,N/A,,llama2-7b,a100-80gb,bf16\n"
         "na_table,l3,tokens/s/GPU,1200,,llama2-7b,a100-80gb,bf16\n")


def test_a_value_kept_as_printed_is_shown_as_such_on_its_permalink(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    ingest_bytes(seeded_engine, TABLE.encode(), "na.csv")
    printed = store.results(seeded_engine).filter(pl.col("source_id") == "na_table", pl.col("metric") == "printed")
    assert printed.height == 2
    at = open_page("sources", f"result={printed['id'][0]}")
    assert not at.exception, at.exception
    texts = [m.value for m in at.markdown]
    assert any(t.startswith("printed") and "not a number" in t and "None" not in t for t in texts), texts


def test_head_to_head_never_pairs_a_value_kept_as_printed(seeded_engine: Engine,
                                                          open_page: Callable[..., AppTest]) -> None:
    ingest_bytes(seeded_engine, TABLE.encode(), "na.csv")
    head = open_page("accelerators", "s=head&acc=h100-sxm,a100-80gb&w=all")
    assert not head.exception, head.exception
