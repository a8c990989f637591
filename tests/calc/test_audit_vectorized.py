"""The vectorized audit gives the same table as the claim-at-a-time oracle, and stays linear in duplicates."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit
from perfledger.calc import flops as fl
from tests.calc import audit_oracle

# A few of each, so that generated claims and tokens/s rows collide on configuration and on model/accelerator;
# "not-a-model" and "not-an-accelerator" are absent from the catalog, "gpt3-175b" has no seq_len default.
MODELS = ["llama2-7b", "llama2-70b", "gpt3-175b", "not-a-model", None]
ACCELERATORS = ["h100-sxm", "a100-80gb", "mi250", "cs-2", "not-an-accelerator", None]
PRECISIONS = ["bf16", "fp8", "fp16", "tf32", "int4", "", None]


@pytest.fixture(scope="module")
def catalog(seeded_engine: Engine) -> tuple[pl.DataFrame, pl.DataFrame]:
    return store.models(seeded_engine), store.accelerators(seeded_engine)


def result_row(metric: str) -> st.SearchStrategy[dict[str, object]]:
    values = (st.floats(min_value=1.0, max_value=5e4) if metric == audit.THROUGHPUT_METRIC
              else st.floats(min_value=1.0, max_value=2000.0))
    return st.fixed_dictionaries({
        "source_id": st.sampled_from(["nvidia", "paper", "mlperf"]),
        "model_id": st.sampled_from(MODELS),
        "accelerator_id": st.sampled_from(ACCELERATORS),
        "n_devices": st.sampled_from([8, 64, 512, None]),
        "precision": st.sampled_from(PRECISIONS),
        "seq_len": st.sampled_from([2048, 4096, None]),
        "global_batch": st.sampled_from([128, None]),
        "tp": st.sampled_from([1, 4, None]),
        "metric": st.just(metric),
        "value": values,
        "unit": st.just("x"),
    })


def results_frame(claims: list[dict[str, object]], throughput: list[dict[str, object]]) -> pl.DataFrame:
    rows = claims + throughput
    schema = {"id": pl.Int64, "source_id": pl.String, "model_id": pl.String, "accelerator_id": pl.String,
              "n_devices": pl.Int64, "precision": pl.String, "seq_len": pl.Int64, "global_batch": pl.Int64,
              "tp": pl.Int64, "metric": pl.String, "value": pl.Float64, "unit": pl.String}
    return pl.DataFrame([{"id": i} | r for i, r in enumerate(rows, 1)], schema=schema).sample(
        fraction=1.0, shuffle=True, seed=len(rows)).sort("id")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(claims=st.lists(result_row(audit.CLAIM_METRIC), max_size=12),
       throughput=st.lists(result_row(audit.THROUGHPUT_METRIC), max_size=12),
       tolerance=st.sampled_from([0.0, 0.02, 0.3, 0.9]),
       formula=st.sampled_from(list(fl.FORMULAS)),
       ceiling=st.sampled_from([0.1, 0.7]))
def test_vectorized_audit_equals_the_claim_at_a_time_oracle(
        catalog: tuple[pl.DataFrame, pl.DataFrame], claims: list[dict[str, object]],
        throughput: list[dict[str, object]], tolerance: float, formula: str, ceiling: float) -> None:
    models, accelerators = catalog
    results = results_frame(claims, throughput)
    ours = audit.audit_claims(results, models, accelerators, audit.AuditRule(tolerance, ceiling, formula))
    oracle = audit_oracle.audit_claims(results, models, accelerators, audit.AuditRule(tolerance, ceiling, formula))
    assert_frame_equal(ours, oracle)


def test_the_seeded_audit_equals_the_oracle_for_every_formula(catalog: tuple[pl.DataFrame, pl.DataFrame],
                                                               seeded_engine: Engine) -> None:
    models, accelerators = catalog
    results = store.results(seeded_engine)
    for formula in fl.FORMULAS:
        rule = audit.AuditRule(formula=formula)
        assert_frame_equal(audit.audit_claims(results, models, accelerators, rule),
                           audit_oracle.audit_claims(results, models, accelerators, rule))


def test_repeated_tokens_rows_are_counted_but_matched_once(catalog: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    models, accelerators = catalog
    config = {"source_id": "nvidia", "model_id": "llama2-70b", "accelerator_id": "h200", "n_devices": 8,
              "precision": "bf16", "seq_len": 4096, "global_batch": None, "tp": None, "unit": "x"}
    copies = 500
    results = results_frame([config | {"metric": audit.CLAIM_METRIC, "value": 836.0}] * copies,
                            [config | {"metric": audit.THROUGHPUT_METRIC, "value": 1880.0}] * copies)
    out = audit.audit_claims(results, models, accelerators)
    assert out.height == copies
    assert out["verdict"].unique().to_list() == ["consistent"]
    assert out["recomputed"].round(1).unique().to_list() == [835.6]
    assert out["explanation"][0].startswith(f"{copies} tokens/s rows share this configuration")
