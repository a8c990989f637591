"""A step faster than the device can be (above its peak at the stated precision) is flagged, left out of the
steady window and of the stall threshold, and counted; in memory and in streaming passes alike. Through the
summary, the limits come from the run's accelerator, precision, model and device count."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.summary import CatalogRows, summarize
from perfledger.calc.steady import SteadyRule, label_steps, steady_state, steady_state_of_ordered
from perfledger.records import ParseSummary, RunConfig
from perfledger.seed import load_seed
from perfledger.settings import DEFAULT_DATA_DIR
from perfledger.vocabulary import LogFormat

# 40 steps of 1 s printing 400 TFLOP/s per device; steps 20-24 timed at their launch: 9,000 TFLOP/s printed
STEPS = pl.DataFrame({
    "step": list(range(1, 41)),
    "step_time_s": [1.0] * 19 + [0.05] * 5 + [1.0] * 16,
    "tokens": [100_000.0] * 40,
    "reported_tflops_per_device": [400.0] * 19 + [9_000.0] * 5 + [400.0] * 16,
})


def test_steps_above_the_peak_are_flagged_counted_and_left_out() -> None:
    rule = SteadyRule(max_tflops_per_device=1979.0)
    s = steady_state(STEPS, rule)
    assert s.impossible == 5 and s.stalls == 0
    assert s.step_time_s_median == 1.0 and s.tokens_per_s == pytest.approx(100_000.0)
    assert label_steps(STEPS, rule).to_list().count("impossible") == 5


def test_a_token_rate_above_what_the_peak_allows_is_impossible_too() -> None:
    s = steady_state(STEPS.drop("reported_tflops_per_device"), SteadyRule(max_tokens_per_s=1_000_000.0))
    assert s.impossible == 5 and s.tokens_per_s == pytest.approx(100_000.0)


def test_without_limits_the_fast_steps_stay_in_the_window() -> None:
    s = steady_state(STEPS, SteadyRule())
    assert s.impossible == 0 and s.tokens_per_s > 100_000.0 * 1.1


def test_passes_flag_the_same_steps() -> None:
    rule = SteadyRule(max_tflops_per_device=1979.0)
    assert steady_state_of_ordered(STEPS.lazy(), rule) == steady_state(STEPS, rule)


def accelerator(ident: str) -> dict[str, object]:
    return next(dict(a) for a in load_seed(DEFAULT_DATA_DIR).accelerators if a["id"] == ident)


def test_the_summary_flags_them_against_the_runs_device_and_says_so() -> None:
    parsed = ParseSummary(format=LogFormat.KEY_VALUE, config=RunConfig())
    config = RunConfig(accelerator="h100-sxm", precision="fp8", n_devices=1)
    summary = summarize(parsed, config, STEPS, CatalogRows(accelerator=accelerator("h100-sxm")))
    assert summary.steady is not None and summary.steady.impossible == 5
    assert summary.steady.rule.max_tflops_per_device == pytest.approx(1979, rel=0.01)
    assert any("5 step(s) faster than the device can be" in w for w in summary.warnings)


def test_a_lora_run_is_counted_under_the_lora_convention_and_says_so() -> None:
    """A LoRA run got model TFLOPS from the pretraining formula, and with its accelerator an MFU, with no word."""
    parsed = ParseSummary(format=LogFormat.KEY_VALUE, config=RunConfig())
    model = next(dict(m) for m in load_seed(DEFAULT_DATA_DIR).models if m["id"] == "llama2-70b")
    steps = STEPS.drop("reported_tflops_per_device").with_columns(pl.lit(1.0).alias("step_time_s"),
                                                                   pl.lit(10_000.0).alias("tokens"))
    known = CatalogRows(model=model, accelerator=accelerator("h100-sxm"))
    full = summarize(parsed, RunConfig(model="llama2-70b", seq_len=4096, n_devices=8, precision="bf16",
                                       workload="pretrain"), steps, known)
    lora = summarize(parsed, RunConfig(model="llama2-70b", seq_len=4096, n_devices=8, precision="bf16",
                                       workload="lora_finetune"), steps, known)
    assert full.model_tflops_per_device is not None and full.mfu is not None
    assert lora.model_tflops_per_device == pytest.approx(full.model_tflops_per_device * 4 / 6)
    assert lora.flops_formula is not None and "LoRA" in lora.flops_formula
    assert any(w.startswith("a LoRA run: model TFLOPS and MFU count") for w in lora.warnings)
