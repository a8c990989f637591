"""A store that holds the same published rows many times over (re-imports under new sources' ids, the bench's
100,000-result store) audits each distinct claim once: every copy gets the verdict its first copy gets, its own
claim id, and its place in the claims' order."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, audit_mfu, audit_time
from perfledger.calc.audit_judge import once_per_distinct

COLUMNS = (*audit.INPUT_COLUMNS, "note")
METRICS = [*audit_time.CLAIM_METRICS, *audit_time.BASIS_METRICS, *audit_mfu.CLAIM_METRICS,
           audit.THROUGHPUT_METRIC, audit.CLAIM_METRIC]


@pytest.fixture(scope="module")
def rows(seeded_engine: Engine) -> pl.DataFrame:
    return store.results(seeded_engine, metric=METRICS, columns=COLUMNS)


def _three_copies(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows three times, interleaved, each copy with fresh ids (as bench/store_pages.build_store makes them)."""
    top = int(rows["id"].max() or 0)
    copies = [rows.with_columns(pl.col("id") + k * top, _k=pl.lit(k)) for k in range(3)]
    return pl.concat(copies).sort("id").sort(pl.col("id") % top, maintain_order=True).drop("_k")


@pytest.mark.parametrize("audit_fn", [audit_time.audit_time_to_train, audit_mfu.audit_utilization])
def test_every_copy_of_a_claim_gets_the_verdict_of_its_first_copy_and_its_own_id(
        audit_fn: Any, rows: pl.DataFrame, seeded_engine: Engine) -> None:
    catalog = store.catalog(seeded_engine)
    once = audit_fn(rows, *catalog)
    copies = _three_copies(rows)
    thrice = audit_fn(copies, *catalog)
    claim_ids = copies.filter(pl.col("id").is_in(thrice["claim_id"].to_list()))["id"]
    assert thrice["claim_id"].to_list() == claim_ids.to_list()
    top = int(rows["id"].max() or 0)
    for k in range(3):
        copy = thrice.filter((pl.col("claim_id") - 1) // top == k).with_columns(pl.col("claim_id") - k * top)
        assert_frame_equal(copy.sort("claim_id").drop("inputs"), once.sort("claim_id").drop("inputs"))


def test_a_claim_is_audited_once_however_often_it_is_stored() -> None:
    claims = pl.DataFrame({"id": [7, 3, 9, 4], "value": [1.0, 2.0, 1.0, 1.0], "metric": ["a", "a", "a", "b"]})
    asked: list[int] = []

    def audit_one(claim: dict[str, Any]) -> dict[str, Any]:
        asked.append(claim["id"])
        return {"claim_id": claim["id"], "verdict": f"{claim['metric']}={claim['value']}"}

    out = once_per_distinct(claims, audit_one, {"claim_id": pl.Int64(), "verdict": pl.String()})
    assert asked == [7, 3, 4]
    assert out.rows() == [(7, "a=1.0"), (3, "a=2.0"), (9, "a=1.0"), (4, "b=1.0")]
