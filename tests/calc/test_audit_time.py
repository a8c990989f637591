"""Time-to-train claims are recomputed from their stated tokens and devices and the same configuration's
throughput, on the published rows of the seed data (NeMo estimate columns, NVIDIA's H200 blog, MLPerf press)."""

from __future__ import annotations

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, audit_time
from perfledger.calc.audit_judge import half_last_digit, within

COLUMNS = (*audit.INPUT_COLUMNS, "note")


@pytest.fixture(scope="module")
def rows(seeded_engine: Engine) -> pl.DataFrame:
    return store.results(seeded_engine, metric=[*audit_time.CLAIM_METRICS, *audit_time.BASIS_METRICS],
                         columns=COLUMNS)


@pytest.fixture(scope="module")
def table(rows: pl.DataFrame, seeded_engine: Engine) -> pl.DataFrame:
    return audit_time.audit_time_to_train(rows, *store.catalog(seeded_engine))


def test_every_nemo_10t_token_estimate_follows_from_its_tokens_per_s_on_1024_gpus(table: pl.DataFrame) -> None:
    est = table.filter(pl.col("metric") == "est_days_to_train_10T_tokens_1k_gpus")
    assert est.height == 22
    assert est["verdict"].to_list() == ["consistent"] * 22
    llama = est.filter(pl.col("source_id") == "nemo_perf_2407", pl.col("model_id") == "llama2-70b").row(0, named=True)
    assert llama["reported"] == 65 and llama["recomputed"] == pytest.approx(65.41, abs=0.01)
    assert llama["unit"] == "days"


def test_every_nemo_finetune_estimate_runs_10m_tokens_on_its_own_devices(table: pl.DataFrame) -> None:
    ft = table.filter(pl.col("metric") == "est_minutes_to_finetune_10M_tokens")
    assert ft.height == 6 and set(ft["verdict"]) == {"consistent"}
    seventy = ft.filter(pl.col("model_id") == "llama2-70b", pl.col("n_devices") == 16).row(0, named=True)
    assert seventy["recomputed"] == pytest.approx(5.736, abs=0.001) and seventy["unit"] == "min"


def test_a_1t_token_estimate_is_recomputed_from_the_model_tflops_of_its_row(table: pl.DataFrame) -> None:
    est = table.filter(pl.col("metric") == "est_days_to_train_1T_tokens_1k_gpus")
    assert est.filter(pl.col("model_id") != "nemotron-22b")["verdict"].unique().to_list() == ["consistent"]
    no_shape = est.filter(pl.col("model_id") == "nemotron-22b")
    assert set(no_shape["verdict"]) == {"unchecked"}
    assert "no shape in the catalog" in no_shape["reason"][0]


def test_the_h200_sft_claim_reads_its_tokens_from_the_note_and_is_off_by_its_lower_bounds(table: pl.DataFrame) -> None:
    sft = table.filter(pl.col("source_id") == "nv_blog_nemo_h200_2023").row(0, named=True)
    assert sft["verdict"] == "inconsistent"
    assert sft["recomputed"] == pytest.approx(1e9 / 15000)  # 1B tokens at 'over 15,000 tokens/s' on 8 GPUs
    assert sft["rel_diff"] == pytest.approx(-0.028, abs=0.001)
    assert "1B tokens on 8 devices" in sft["reason"] and "-2.8%" in sft["reason"]


def test_press_times_without_a_token_count_are_unchecked_with_why(table: pl.DataFrame) -> None:
    press = table.filter(pl.col("source_id").is_in(["engadget_eos_mlperf31", "eetimes_mlperf30_via_blog"]))
    assert press.height == 2 and set(press["verdict"]) == {"unchecked"}
    assert set(press["reason"]) == {"the claim states no token count (none in its metric or note)"}


def test_the_gtc_estimate_is_recomputed_from_its_mfu_and_the_fp16_peak_on_1000_cards(table: pl.DataFrame) -> None:
    gtc = table.filter(pl.col("source_id") == "gtic2023_nvidia_talk").row(0, named=True)
    assert gtc["recomputed"] / 86400 == pytest.approx(23.4, abs=0.1)  # 300B tokens, 1024 A800 at 50% of 312
    # "about 24 days on 1,000 cards": 1,000 devices give 23.96 days, so the device count is read both ways
    assert gtc["verdict"] == "other convention" and gtc["convention"].endswith("1000-devices")
    assert "1,024 devices read as 1,000" in gtc["reason"] and "(24.0 days)" in gtc["reason"]


def test_a_round_thousand_of_devices_is_read_both_ways_and_other_counts_are_not() -> None:
    assert [audit_time.thousand_reading(n) for n in (1000, 1024, 4096, 6000, 512, 1536)] == [
        1024, 1000, 4000, 6144, None, None]


def test_every_verdict_but_consistent_has_a_one_sentence_reason(table: pl.DataFrame) -> None:
    for r in table.filter(pl.col("verdict") != "consistent").iter_rows(named=True):
        assert r["reason"] and ". " not in r["reason"] and r["reason"] == r["explanation"]


def test_a_claim_reproduced_only_when_1k_means_1000_names_that_convention(rows: pl.DataFrame,
                                                                          seeded_engine: Engine) -> None:
    claim = (pl.col("metric") == "est_days_to_train_10T_tokens_1k_gpus") & (pl.col("source_id") == "nemo_perf_2407") \
        & (pl.col("model_id") == "llama2-7b")  # 6.67 days on 1,024 GPUs, 6.83 on 1,000
    edited = rows.with_columns(value=pl.when(claim).then(6.83).otherwise(pl.col("value")))
    out = audit_time.audit_time_to_train(edited, *store.catalog(seeded_engine)).filter(claim).row(0, named=True)
    assert out["verdict"] == "other convention" and out["convention"] == "1000-devices"
    assert "1K read as 1,000 devices" in out["reason"]


def test_tokens_in_a_note_must_be_stated_once() -> None:
    assert audit_time.tokens_in("'a 1B-token SFT in a little over 18 hours'") == 1e9
    assert audit_time.tokens_in("1B tokens here, 2B tokens there") is None
    assert audit_time.tokens_in("GPT-3 175B (MLPerf)") is None


def test_a_printed_figure_is_met_by_anything_that_rounds_to_it() -> None:
    assert half_last_digit(5.0) == 0.5 and half_last_digit(0.957) == pytest.approx(0.0005)
    assert within(5.0, 4.83, 0.02) and not within(5.0, 4.4, 0.02)
