"""Printed names the catalog does not know: every row stored unlinked, one warning per distinct name."""

from __future__ import annotations

import csv
import io
from collections import Counter

import polars as pl

from ingest.pipeline import ingest_bytes
from perfledger import store
from tests.claims.test_published_table import claims_csv


def test_each_unknown_model_name_of_the_llm_foundry_table_is_warned_once_with_its_rows_and_nearest_ids(
        seeded: store.Engine) -> None:
    data, rows = claims_csv(model=str)  # the Model cell exactly as the README prints it: "70b", not "MPT-70b"
    printed = Counter(r["model"] for r in csv.DictReader(io.StringIO(data.decode())))
    outcome = ingest_bytes(seeded, data, "mpt_as_printed.csv")
    assert not outcome.rows_refused and outcome.imported == f"{rows * 4} added, 0 updated, 0 unchanged"
    models = [u for u in outcome.unlinked if u.kind == "model"]
    assert {u.name: u.rows for u in models} == dict(printed) and len(models) == len(printed) == 9
    assert not [u for u in outcome.unlinked if u.kind == "accelerator"]
    seventy = next(u for u in models if u.name == "70b")
    assert seventy.nearest[0] == "mpt-70b" and len(seventy.nearest) == 3
    assert "model '70b' (36 rows) is not in the catalog (nearest: mpt-70b" in seventy.warning()
    assert 'catalog link "70b" mpt-70b' in seventy.warning()
    assert outcome.as_json()["unlinked"][0] == models[0].as_json()
    stored = store.results(seeded).filter(pl.col("source_id") == "llm_foundry_benchmarks")
    assert stored.height == rows * 4 and stored["model_id"].is_null().all()
    assert sorted(stored["model_as_printed"].unique().to_list()) == sorted(printed)


def test_the_same_file_again_warns_again_until_the_name_is_linked(seeded: store.Engine) -> None:
    data, _ = claims_csv(model=str)
    first = ingest_bytes(seeded, data, "mpt_as_printed.csv")
    again = ingest_bytes(seeded, data, "mpt_as_printed.csv")
    assert again.unlinked == first.unlinked
    store.link_name(seeded, "model", "70b", "mpt-70b")
    after = ingest_bytes(seeded, data, "mpt_as_printed.csv")
    assert "70b" not in {u.name for u in after.unlinked} and len(after.unlinked) == 8


def test_a_table_whose_names_all_resolve_warns_nothing(seeded: store.Engine) -> None:
    data, _ = claims_csv()
    assert ingest_bytes(seeded, data, "mpt.csv").unlinked == ()
