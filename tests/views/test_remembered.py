"""Remembered computations: asked again of the same content they answer from memory; a changed, added or
reordered row, or a changed rule, is computed afresh, so the Audit page never shows a stale verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import names, store, views
from perfledger.records import ResultRecord
from perfledger.views.remembered import by_content, forget


def counting() -> tuple[list[int], Callable[[pl.DataFrame, Any], float]]:
    calls: list[int] = []

    @by_content(keep=2)
    def total(frame: pl.DataFrame, scale: float) -> float:
        calls.append(1)
        return float(frame["x"].sum()) * scale

    return calls, total


def test_the_same_content_in_another_frame_is_answered_from_memory() -> None:
    calls, total = counting()
    assert total(pl.DataFrame({"x": [1.0, 2.0]}), 2.0) == 6.0
    assert total(pl.DataFrame({"x": [1.0, 2.0]}), 2.0) == 6.0
    assert len(calls) == 1


@pytest.mark.parametrize("other", [
    pl.DataFrame({"x": [1.0, 2.5]}),  # a changed value
    pl.DataFrame({"x": [2.0, 1.0]}),  # the same rows in another order
    pl.DataFrame({"x": [1.0, 2.0, 0.0]}),  # an added row
    pl.DataFrame({"x": [1, 2]}),  # another dtype
    pl.DataFrame({"x": [1.0, 2.0], "z": [0, 0]}),  # another column
])
def test_any_change_to_the_rows_is_computed_afresh(other: pl.DataFrame) -> None:
    calls, total = counting()
    total(pl.DataFrame({"x": [1.0, 2.0]}), 1.0)
    total(other, 1.0)
    assert len(calls) == 2


def test_a_changed_argument_is_computed_afresh_and_only_the_last_answers_are_kept() -> None:
    calls, total = counting()
    frame = pl.DataFrame({"x": [1.0]})
    for scale in (1.0, 2.0, 3.0, 1.0):
        total(frame, scale)
    assert len(calls) == 4  # 1.0 was the oldest of three, past keep=2


def test_forgetting_computes_the_next_call_afresh() -> None:
    calls, total = counting()
    frame = pl.DataFrame({"x": [1.0]})
    total(frame, 1.0)
    forget()
    total(frame, 1.0)
    assert len(calls) == 2


def test_an_unhashable_argument_is_refused_not_silently_recomputed() -> None:
    _, total = counting()
    with pytest.raises(TypeError):
        total(pl.DataFrame({"x": [1.0]}), [1.0])


def test_the_audit_sees_a_claim_stored_after_it_was_computed(writable_engine: Engine) -> None:
    before = views.table("audit", views.AuditView(), writable_engine)
    claim = ResultRecord(metric="model_tflops_per_device", value=400.0, unit="TFLOP/s", model_id="llama2-70b",
                         accelerator_id="h100-sxm", n_devices=8, precision="bf16", seq_len=4096,
                         source_id=before["source_id"].drop_nulls()[0], note="remembered-test")
    store.add_results(writable_engine, [claim])
    after = views.table("audit", views.AuditView(), writable_engine)
    assert after.height == before.height + 1
    again = views.table("audit", views.AuditView(tolerance=0.5), writable_engine)
    figures = again.filter(~pl.col("metric").is_in(names.RELATION_CELLS))  # a whole-number identity has none
    assert figures["tolerance"].unique().to_list() == [0.5]
