"""The published figures DESIGN lists, recomputed from the rows stored by `init` (not typed in here)."""

from __future__ import annotations

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc.audit import AuditRule, audit_claims
from perfledger.figures import compute

NEMO = "nv_blog_nemo_h200_2023"


def _stored(engine: Engine, metric: str, model: str, accelerator: str) -> float:
    rows = store.results(engine, metric=metric, model_ids=[model], accelerator_ids=[accelerator],
                         source_ids=[NEMO])
    assert rows.height == 1, rows
    return float(rows["value"][0])


@pytest.mark.parametrize(("model", "published"), [("llama2-7b", 3.7), ("llama2-13b", 4.0), ("llama2-70b", 4.2)])
def test_nemo_h200_vs_a100_speedup_from_stored_rows_matches_published(seeded_engine: Engine, model: str,
                                                                      published: float) -> None:
    h200 = _stored(seeded_engine, "tokens_per_s_per_device", model, "h200")
    a100 = _stored(seeded_engine, "tokens_per_s_per_device", model, "a100-80gb")
    assert round(m.speedup(h200, a100), 1) == published


@pytest.mark.parametrize(("model", "accelerator", "published"), [
    ("llama2-7b", "h200", 779), ("llama2-13b", "h200", 822), ("llama2-70b", "h200", 836),
    ("llama2-7b", "a100-80gb", 211), ("llama2-13b", "a100-80gb", 206), ("llama2-70b", "a100-80gb", 201),
])
def test_nemo_tflops_recomputed_from_stored_tokens_per_s_within_one_percent(
        seeded_engine: Engine, model: str, accelerator: str, published: float) -> None:
    tps = _stored(seeded_engine, "tokens_per_s_per_device", model, accelerator)
    shape_row = store.models(seeded_engine).filter(pl.col("id") == model).row(0, named=True)
    flops = fl.flops_per_token(fl.ModelShape.from_row(shape_row), 4096)
    assert m.model_tflops(tps, flops) == pytest.approx(published, rel=0.01)
    assert _stored(seeded_engine, "model_tflops_per_device", model, accelerator) == published


def test_eight_h200_fine_tune_llama2_70b_on_1b_tokens_in_18_5_hours(seeded_engine: Engine) -> None:
    figure = compute("time_to_train", {"model": "llama2-70b", "tokens": "1e9", "devices": "8",
                                       "tokens_per_s_per_device": "1880"}, seeded_engine)
    assert figure.value / 3600 == pytest.approx(18.47, abs=0.01)


def test_gpt3_175b_on_1024_a800_at_half_peak_takes_about_24_days(seeded_engine: Engine) -> None:
    figure = compute("time_to_train", {"model": "gpt3-175b", "tokens": "300e9", "devices": "1024",
                                       "accelerator": "a800-80gb", "precision": "fp16", "efficiency": "0.5"},
                     seeded_engine)
    assert figure.value / 86400 == pytest.approx(24, rel=0.05)
    assert figure.inputs["peak_tflops"] == 312


def test_fsdp_vs_3d_gpt20b_table_reads_back_from_the_store(seeded_engine: Engine) -> None:
    rows = store.results(seeded_engine, metric="relative_throughput", model_ids=["gpt3-20b"]).filter(
        pl.col("strategy") == "fsdp").sort("n_devices")
    assert rows.select("n_devices", "value").rows() == [(8, 0.78), (16, 0.88), (32, 0.89), (64, 0.86), (128, 0.96)]


def test_audit_marks_each_nemo_tflops_claim_consistent_and_h200_ones_fp8_only(seeded_engine: Engine) -> None:
    audit = audit_claims(store.results(seeded_engine), store.models(seeded_engine),
                         store.accelerators(seeded_engine)).filter(pl.col("source_id") == NEMO)
    llama = audit.filter(pl.col("model_id").str.starts_with("llama2"))
    assert llama.height == 6
    assert set(llama["verdict"]) == {"consistent"}
    h200 = llama.filter(pl.col("accelerator_id") == "h200")
    assert set(h200["plausibility"]) == {"implausible"}
    assert all("plausible only in FP8" in e for e in h200["explanation"])
    assert set(llama.filter(pl.col("accelerator_id") == "a100-80gb")["plausibility"]) == {"plausible"}


def test_the_797_tflops_claim_is_not_paired_with_another_sources_fp8_run_of_another_setup(
        seeded_engine: Engine) -> None:
    """The blog's 797 TFLOPS (precision and devices unstated) used to be "consistent" with another
    source's FP8 run at 512 GPUs; another setup is no input, even when other sources are asked for."""
    for cross in (False, True):
        audit = audit_claims(store.results(seeded_engine), store.models(seeded_engine),
                             store.accelerators(seeded_engine), AuditRule(cross_source=cross))
        claim = audit.filter((pl.col("source_id") == NEMO) & (pl.col("reported") == 797)).row(0, named=True)
        assert claim["verdict"] == "unchecked" and claim["inputs"] is None
        assert "no tokens/s figure for the same configuration in its own source" in claim["explanation"]
