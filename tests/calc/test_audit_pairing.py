"""What a claim is checked against: its own printed row first, then its source's same configuration,
other sources only when asked; every verdict names the result it used."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, audit_mfu, audit_time

SCHEMA = {"id": pl.Int64, "source_id": pl.String, "model_id": pl.String, "model_as_printed": pl.String,
          "accelerator_id": pl.String, "n_devices": pl.Int64, "precision": pl.String, "seq_len": pl.Int64,
          "global_batch": pl.Int64, "locator": pl.String, "metric": pl.String, "value": pl.Float64,
          "unit": pl.String, "note": pl.String}


@pytest.fixture(scope="module")
def catalog(seeded_engine: Engine) -> tuple[pl.DataFrame, pl.DataFrame]:
    return store.models(seeded_engine), store.accelerators(seeded_engine)


def frame(*rows: dict[str, Any]) -> pl.DataFrame:
    base = {k: None for k in SCHEMA}
    return pl.DataFrame([base | {"id": i} | r for i, r in enumerate(rows, 1)], schema=SCHEMA)


def maxtext(locator: str, tflops: float, mfu: float, model: str = "32B model") -> list[dict[str, Any]]:
    row = {"source_id": "maxtext", "model_as_printed": model, "accelerator_id": "tpu-v5p", "locator": locator}
    return [row | {"metric": "model_tflops_per_device", "value": tflops},
            row | {"metric": "mfu", "value": mfu}]


def test_an_mfu_claim_is_recomputed_from_its_own_printed_row_not_a_sibling_row(catalog: Any) -> None:
    # MaxText v5p, 1024B model: "1x v5p-4096" 297 TFLOP/s 64.80%; "2x v5p-2048" printed first, 237 and 51.55%
    rows = frame(*maxtext("line 44", 237, 0.5155, "1024B model"), *maxtext("line 45", 297, 0.6480, "1024B model"))
    out = audit_mfu.audit_utilization(rows, *catalog).sort("claim_id")
    assert out["verdict"].to_list() == ["consistent", "consistent"]
    assert out["inputs"].to_list() == ["result 1 (maxtext, line 44)", "result 3 (maxtext, line 45)"]


def test_models_known_only_by_their_printed_names_are_different_configurations(catalog: Any) -> None:
    rows = frame(*maxtext("line 11", 328, 0.7147, "32B model")[:1], *maxtext("line 17", 323, 0.7031, "64B model")[1:])
    out = audit_mfu.audit_utilization(rows, *catalog)
    assert out["verdict"].to_list() == ["unchecked"] and out["inputs"].to_list() == [None]


def tflops_and_throughput(claim_source: str, throughput_source: str) -> pl.DataFrame:
    config = {"model_id": "llama2-70b", "accelerator_id": "h200", "n_devices": 8, "precision": "bf16",
              "seq_len": 4096}
    return frame(config | {"source_id": claim_source, "metric": "model_tflops_per_device", "value": 836.0},
                 config | {"source_id": throughput_source, "metric": "tokens_per_s_per_device", "value": 1880.0,
                           "locator": "Table 2"})


def test_other_sources_are_used_only_when_asked_and_the_verdict_says_so(catalog: Any) -> None:
    rows = tflops_and_throughput("blog", "nemo_docs")
    alone = audit.audit_claims(rows, *catalog).row(0, named=True)
    assert alone["verdict"] == "unchecked" and alone["inputs"] is None
    assert "--cross-source" in alone["explanation"]
    across = audit.audit_claims(rows, *catalog, audit.AuditRule(cross_source=True)).row(0, named=True)
    assert across["verdict"] == "consistent" and across["inputs"] == "result 2 (nemo_docs, Table 2)"
    assert "cross-source pairing asked" in across["explanation"]


def test_a_row_printing_step_time_batch_and_sequence_gives_the_throughput_labelled_derived(catalog: Any) -> None:
    # Megatron MoE Model Zoo style: 256 GPUs, GBS 2048, seq 4096, 19.7 s a step -> 1,663 tokens/s/GPU
    config = {"source_id": "zoo", "model_id": "llama2-70b", "accelerator_id": "h100-sxm", "n_devices": 256,
              "precision": "bf16", "seq_len": 4096, "global_batch": 2048, "locator": "line 12"}
    tps = 2048 * 4096 / 19.7 / 256
    flops = audit.audit_claims(frame(config | {"metric": "tokens_per_s_per_device", "value": tps}),
                               *catalog)  # no claim: nothing audited
    assert flops.height == 0
    rows = frame(config | {"metric": "step_time_s", "value": 19.7},
                 config | {"metric": "model_tflops_per_device", "value": 800.0})
    out = audit.audit_claims(rows, *catalog).row(0, named=True)
    assert out["tokens_per_s_per_device"] == pytest.approx(tps)
    assert out["inputs"].startswith("result 1 (zoo, line 12; tokens/s derived from its step time")


def test_a_time_claim_names_the_throughput_it_used(catalog: Any) -> None:
    config = {"source_id": "nemo", "model_id": "llama2-70b", "accelerator_id": "h100-sxm", "n_devices": 64,
              "precision": "bf16", "seq_len": 4096, "locator": "row 3"}
    rows = frame(config | {"metric": "tokens_per_s_per_device", "value": 1000.0},
                 config | {"metric": "est_days_to_train_1T_tokens_1k_gpus", "value": 11.3})
    out = audit_time.audit_time_to_train(rows, *catalog).row(0, named=True)
    assert out["verdict"] == "consistent" and out["inputs"] == "result 1 (nemo, row 3)"
