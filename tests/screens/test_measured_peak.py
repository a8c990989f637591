"""The Accelerators page's MFU view sets each row against the matmul peak the micro-benchmark measured."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store, views
from perfledger.records import ResultRecord


def _mfu_rows(engine: Engine) -> list[dict[str, object]]:
    state = replace(views.AcceleratorView(), metric="model_tflops_per_device", norm="mfu")
    return views.accelerators.table(state, engine).filter(pl.col("accelerator") == "h100-sxm").to_dicts()


def test_mfu_rows_show_the_measured_matmul_peak_beside_the_datasheet_peak(seeded_engine: Engine) -> None:
    before = _mfu_rows(seeded_engine)
    assert before and all(r["MFU vs measured peak"] is None for r in before)
    store.add_results(seeded_engine, [
        ResultRecord(metric="matmul_tflops", value=600.0, unit="TFLOP/s/device", accelerator_id="h100-sxm",
                     precision=p, workload="microbench", evidence="measured", source_id=None)
        for p in ("bf16", "fp8")
    ] + [ResultRecord(metric="matmul_tflops", value=700.0, unit="TFLOP/s/device", accelerator_id="h100-sxm",
                      precision="bf16", workload="microbench", evidence="measured", note="second run")])
    after = _mfu_rows(seeded_engine)
    checked = [r for r in after if r["normalized"] is not None and (r["precision"] or "bf16") in ("bf16", "unstated")]
    assert checked
    for r in checked:
        assert r["measured matmul TFLOPS"] == 700.0  # the best of the measured runs
        assert r["MFU vs measured peak"] == pytest.approx(r["normalized"] * r["peak TFLOPS used"] / 700.0)
