"""Plausibility that does not contradict itself: MFU claims judged as their TFLOPS twins, FP8 named as a way out
only where the hardware has an FP8 peak that brings the figure under the ceiling."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, audit_mfu


def _twins(engine: Engine, tflops: float, mfu: float, accelerator: str) -> pl.DataFrame:
    """A printed row's TFLOPS and MFU, in the columns the audit reads (the rest empty)."""
    schema = store.results(engine, metric="mfu", columns=audit.INPUT_COLUMNS).schema
    row = {"source_id": "maxtext_v5p", "model_id": None, "accelerator_id": accelerator, "model_as_printed": "32B model",
           "accelerator_as_printed": "TPU v5p", "precision": "bf16", "locator": "README.md line 11", "unit": None}
    return pl.DataFrame([row | {"id": 1, "metric": "model_tflops_per_device", "value": tflops},
                         row | {"id": 2, "metric": "mfu", "value": mfu}], schema=schema)


def test_an_mfu_claim_above_the_ceiling_is_flagged_like_its_tflops_twin(seeded_engine: Engine) -> None:
    models, accelerators = store.catalog(seeded_engine)
    rows = _twins(seeded_engine, 328.0, 0.7147, "tpu-v5p")  # MaxText's v5p README: 328 TFLOP/s/chip, 71.47% MFU
    tflops = audit.audit_claims(rows, models, accelerators).row(0, named=True)
    mfu = audit_mfu.audit_utilization(rows, models, accelerators).row(0, named=True)
    assert tflops["plausibility"] == mfu["plausibility"] == "implausible"
    assert "71.5% of the dense bf16 peak exceeds the 70% ceiling" in mfu["explanation"]
    assert "71.5% of the dense bf16 peak exceeds the 70% ceiling" in tflops["explanation"]
    assert audit_mfu.audit_utilization(_twins(seeded_engine, 300.0, 0.65, "tpu-v5p"), models, accelerators)["plausibility"][0] \
        == "plausible"


def test_tpu_v5p_has_no_fp8_peak_so_no_fp8_way_out_is_offered(seeded_engine: Engine) -> None:
    models, accelerators = store.catalog(seeded_engine)
    explanation = audit.audit_claims(_twins(seeded_engine, 328.0, 0.7147, "tpu-v5p"), models, accelerators)["explanation"][0]
    assert "plausible only in FP8" not in explanation and "no FP8 peak" in explanation


def test_an_fp8_peak_that_does_not_bring_the_figure_under_the_ceiling_is_not_called_a_way_out(
        seeded_engine: Engine) -> None:
    models, accelerators = store.catalog(seeded_engine)
    fp8_at_bf16_rate = accelerators.with_columns(  # the v5p row as it was: FP8 listed at the BF16 rate
        fp8_tflops=pl.when(pl.col("id") == "tpu-v5p").then(459.0).otherwise(pl.col("fp8_tflops")))
    explanation = audit.audit_claims(_twins(seeded_engine, 328.0, 0.7147, "tpu-v5p"), models, fp8_at_bf16_rate)["explanation"][0]
    assert "plausible only in FP8" not in explanation and "even the FP8 dense peak gives 71.5%" in explanation
    h100 = audit.audit_claims(_twins(seeded_engine, 750.0, 0.758, "h100-sxm"), models, accelerators)["explanation"][0]
    assert "plausible only in FP8" in h100  # 750 of H100's 1,979 FP8: 37.9%
