"""Every real fixture of the B parsers parses with the expected steps, config and results."""

from __future__ import annotations

import pytest

from ingest.parsers import (
    claims_csv,
    hf_results_json,
    hf_trainer_log,
    hf_trainer_state,
    llmc,
    mlperf,
    nanogpt,
    optimum_habana,
    torchtitan,
)
from perfledger.records import STEP_SCHEMA

from .helpers import LOGS, parse_with

# file -> (parser module, expected step rows, expected result metrics in order)
FIXTURES = {
    "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt": (mlperf, 7, ["time_to_train_s", "samples_per_s"]),
    "amd_mi355x_llama31_8b_v5.1_result_0.txt": (mlperf, 14, ["time_to_train_s", "tokens_per_s", "samples_per_s"]),
    "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt": (
        mlperf, 3430, ["time_to_train_s", "tokens_per_s", "samples_per_s"]),
    "google_tpu_v5p_1024_maxtext_gpt3_v4.0_result_0.txt": (mlperf, 0, ["time_to_train_s", "tokens_per_s"]),
    "habana_gaudi2x8_llama2_70b_lora_v4.0_result_0.txt": (mlperf, 9, ["time_to_train_s"]),
    "juniper_a100_n8_deepspeed_llama2_70b_lora_v4.0_result_0.txt": (mlperf, 18, ["time_to_train_s"]),
    "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt": (mlperf, 43, ["time_to_train_s", "samples_per_s"]),
    "nvidia_eos_dfw_n1344_h100_gpt3_nemo_v4.0_result_0_truncated.txt": (mlperf, 0, []),
    "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt": (
        mlperf, 0, ["time_to_train_s", "tokens_per_s", "tokens_per_s_per_device"]),
    "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt": (mlperf, 5, ["time_to_train_s", "samples_per_s"]),
    "nvidia_hsg_ngpu2560_llama31_405b_nemo_v5.1_result_0.txt": (mlperf, 343, ["time_to_train_s", "tokens_per_s"]),
    "jaong_cpt_large_finetune_trainer_state.json": (hf_trainer_state, 10, ["samples_per_s"]),
    "jaong_cpt_large_finetune_all_results.json": (hf_results_json, 0, ["samples_per_s"]),
    "jaong_cpt_large_finetune_windows_console_crlf.txt": (hf_trainer_log, 10, ["samples_per_s"]),
    "bigscience_hf_ds_gpt2_base_n4_v100_multirank.out": (hf_trainer_log, 0, ["samples_per_s"]),
    "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out": (hf_trainer_log, 0, ["samples_per_s"]),
    "optimum_habana_test_examples_baselines_gaudi123.json": (optimum_habana, 0, ["samples_per_s"] * 127),
    "qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log": (torchtitan, 1251, []),
    "qiu023_vlm_447m_sft_8gpu_fsdp2_pp4_rtx5090_ansi.log": (torchtitan, 500, []),
    "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log": (torchtitan, 50, []),
    "chenzihua_nanogpt_shakespeare_char_termux_nan.log": (nanogpt, 91, []),
    "siddanthemani_gpt2_124m_8xa100_main.log": (llmc, 19552, []),
    "claims_example.csv": (claims_csv, 0, ["tokens_per_s_per_device"] * 2 + ["model_tflops_per_device"] * 2),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_parses_to_expected_steps_and_results(name: str) -> None:
    module, n_steps, metrics = FIXTURES[name]
    summary, steps = parse_with(module.PARSER, LOGS / name)
    assert steps.height == n_steps
    assert dict(steps.schema) == STEP_SCHEMA
    assert [r.metric for r in summary.results] == metrics
    assert summary.format == module.PARSER.format


# DeepSpeed start-up output fills the first 64 KiB of these two: no Trainer marker is in the head.
NOT_SNIFFABLE = {"bigscience_hf_ds_gpt2_base_n4_v100_multirank.out", "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out"}


@pytest.mark.parametrize("name", sorted(set(FIXTURES) - NOT_SNIFFABLE))
def test_fixture_is_recognised_by_its_own_parser_from_the_head(name: str) -> None:
    module = FIXTURES[name][0]
    head = (LOGS / name).read_bytes()[: 64 * 1024].decode("utf-8", errors="replace")
    from ingest.text import clean_text

    assert module.PARSER.sniff(clean_text(head), name)


def test_every_copied_fixture_is_listed() -> None:
    ours = {p.name for p in LOGS.iterdir() if p.suffix != ".md"} & set(FIXTURES)
    assert ours == set(FIXTURES)


def test_parse_is_the_same_whatever_the_chunk_size() -> None:
    name = "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt"
    _, small = parse_with(mlperf.PARSER, LOGS / name, chunk_bytes=4096)
    _, large = parse_with(mlperf.PARSER, LOGS / name, chunk_bytes=8 * 1024 * 1024)
    assert small.equals(large)


def test_nanogpt_stores_nan_losses_as_null_counts_them_and_drops_unmeasured_mfu() -> None:
    summary, steps = parse_with(nanogpt.PARSER, LOGS / "chenzihua_nanogpt_shakespeare_char_termux_nan.log")
    first = steps.row(0, named=True)
    assert first["step"] == 0 and first["reported_mfu"] is None  # "mfu -100.00%"
    assert first["step_time_s"] == pytest.approx(10.26808)
    nan_steps = [row["step"] for row in steps.iter_rows(named=True) if row["loss"] is None]
    assert nan_steps[0] == 425 and len(nan_steps) == 6
    assert any("nan" in w for w in summary.warnings)


def test_llmc_main_log_has_no_step_time_and_says_throughput_cannot_be_derived() -> None:
    summary, steps = parse_with(llmc.PARSER, LOGS / "siddanthemani_gpt2_124m_8xa100_main.log")
    assert steps["step_time_s"].null_count() == steps.height
    assert steps.row(0, named=True)["loss"] == pytest.approx(11.0116)
    assert "throughput cannot be derived" in summary.warnings[0]
    assert summary.meta["last_eval"] == {"step": 19552, "accuracy": 0.3054}
