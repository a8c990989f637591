"""Every real fixture log is detected as its format and parses to its steps, configuration and results."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.detect import detect_file, parse_file
from ingest.parsers import (
    claims_csv,
    hf_trainer_state,
    key_value_log,
    metrics_file,
    mlperf,
    optimum_habana,
    torchtitan,
)
from ingest.text import clean_text
from perfledger.records import STEP_SCHEMA
from perfledger.vocabulary import LogFormat
from tests.ingest.parsers.helpers import LOGS, parse_with

# file -> (format, steps, config fields that must be found)
EXPECTED: dict[str, tuple[LogFormat, int, dict[str, object]]] = {
    "ascend910b_mindspeed_ds3_sft_8npu_excerpt.txt": (LogFormat.MEGATRON, 10, {"global_batch": 8}),
    "bigscience_meg_gpt2_base_n8_tp4_pp8_v100.out": (
        LogFormat.MEGATRON, 20, {"n_devices": 32, "tp": 4, "pp": 8, "precision": "fp16", "hidden_size": 7168}),
    "bigscience_meg_gpt2_perf_n16_v100.out": (
        LogFormat.MEGATRON, 3, {"n_devices": 64, "tp": 4, "pp": 16, "seq_len": 1024, "global_batch": 1024}),
    "cscs_gh200_gated_attn_te_1gpu_rankprefix.out": (
        LogFormat.MEGATRON, 343, {"n_devices": 1, "seq_len": 2048, "num_kv_heads": 8, "swiglu": True}),
    "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out": (
        LogFormat.MEGATRON, 344, {"n_devices": 40, "dp": 40, "seq_len": 8192, "global_batch": 80, "precision": "bf16"}),
    "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log": (
        LogFormat.MEGATRON, 38, {"n_devices": 4, "tp": 2, "dp": 2, "seq_len": 2048}),  # its longest launch
    "megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt": (
        LogFormat.MEGATRON, 20, {"cp": 2, "global_batch": 8, "seq_len": 4096, "framework": "megatron-bridge"}),
    "pai_megatron_patch_rocm_mi300_mixtral8x22b_2n8g_notimestamp.log": (
        LogFormat.MEGATRON, 1525, {"n_devices": 16, "tp": 8, "pp": 2, "num_experts": 8, "moe_top_k": 2}),
    "primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log": (
        LogFormat.MEGATRON, 20, {"n_devices": 8, "ep": 8, "precision": "fp8", "framework": "primus"}),
    "megatron_ci_golden_gpt3_15b_8t_release_dgx_h100.json": (LogFormat.MEGATRON_GOLDEN, 10201, {}),
    "megatron_ci_golden_gpt3_mcore_te_tp2_pp2_cp2_dgx_h100.json": (LogFormat.MEGATRON_GOLDEN, 50, {}),
    "bigscience_meg_ds_3d_gpt2_perf_n16_ds_on_v100.out": (
        LogFormat.DEEPSPEED, 49, {"n_devices": 64, "framework": "megatron-deepspeed"}),
    "bigscience_meg_ds_zero_gpt2_perf_n16_v100.out": (LogFormat.DEEPSPEED, 3, {"n_devices": 64, "global_batch": 768}),
    "msft_megatron_ds_gpt3_125m_random_ltd_baseline_8gpu_ansi.log": (
        LogFormat.DEEPSPEED, 47, {"n_devices": 8, "global_batch": 256, "seq_len": 2048}),
    "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log": (LogFormat.DEEPSPEED, 12, {"n_devices": 8}),
    "dschat_step1_sft_opt1.3b_gbs128.log": (
        LogFormat.DEEPSPEED, 736, {"model_as_printed": "facebook/opt-1.3b", "global_batch": 128}),
    "dschat_step2_reward_opt350m_gbs64.log": (LogFormat.DEEPSPEED, 184, {"global_batch": 64}),
    "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log": (
        LogFormat.NEMO, 20, {"n_devices": 8, "precision": "fp8", "global_batch": 128, "seq_len": 8192}),
    "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log": (LogFormat.NEMO, 20, {"n_devices": 16, "pp": 2}),
    "gcp_a4_b200_qwen3_30b_16gpu_nemo2504.log": (LogFormat.NEMO, 20, {"n_devices": 16, "ep": 8, "num_experts": 128}),
    "gpu_recipes_dllogger_example_gpt175b.json": (LogFormat.METRICS, 50, {"framework": "nemo"}),
}


# file -> (parser module, expected step rows, expected result metrics in order)
FIXTURES = {
    "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt": (mlperf, 7, ["time_to_train_s", "samples_per_s"]),
    "amd_mi355x_llama31_8b_v5.1_result_0.txt": (mlperf, 14, ["time_to_train_s", "tokens_per_s", "samples_per_s"]),
    "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt": (
        mlperf, 3420, ["time_to_train_s", "tokens_per_s", "samples_per_s"]),
    "google_tpu_v5p_1024_maxtext_gpt3_v4.0_result_0.txt": (mlperf, 0, ["time_to_train_s", "tokens_per_s"]),
    "habana_gaudi2x8_llama2_70b_lora_v4.0_result_0.txt": (mlperf, 9, ["time_to_train_s"]),
    "juniper_a100_n8_deepspeed_llama2_70b_lora_v4.0_result_0.txt": (mlperf, 18, ["time_to_train_s"]),
    "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt": (mlperf, 43, ["time_to_train_s", "samples_per_s"]),
    "nvidia_eos_dfw_n1344_h100_gpt3_nemo_v4.0_result_0_truncated.txt": (mlperf, 0, []),
    "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt": (
        mlperf, 0, ["time_to_train_s", "tokens_per_s", "tokens_per_s_per_device"]),
    "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt": (mlperf, 5, ["time_to_train_s", "samples_per_s"]),
    "nvidia_hsg_ngpu2560_llama31_405b_nemo_v5.1_result_0.txt": (mlperf, 340, ["time_to_train_s", "tokens_per_s"]),
    "jaong_cpt_large_finetune_trainer_state.json": (hf_trainer_state, 10, ["samples_per_s"]),
    "jaong_cpt_large_finetune_all_results.json": (metrics_file, 0, ["samples_per_s"]),
    "jaong_cpt_large_finetune_windows_console_crlf.txt": (key_value_log, 10, ["samples_per_s"]),
    "bigscience_hf_ds_gpt2_base_n4_v100_multirank.out": (key_value_log, 1, ["samples_per_s"]),
    "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out": (key_value_log, 1, ["samples_per_s"]),
    "optimum_habana_test_examples_baselines_gaudi123.json": (optimum_habana, 0, ["samples_per_s"] * 127),
    "qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log": (torchtitan, 1251, []),
    "qiu023_vlm_447m_sft_8gpu_fsdp2_pp4_rtx5090_ansi.log": (torchtitan, 500, []),
    "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log": (torchtitan, 50, []),
    "chenzihua_nanogpt_shakespeare_char_termux_nan.log": (key_value_log, 91, []),
    "siddanthemani_gpt2_124m_8xa100_main.log": (key_value_log, 19552, []),
    "claims_example.csv": (claims_csv, 0, ["tokens_per_s_per_device"] * 2 + ["model_tflops_per_device"] * 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detection_picks_the_format_of_each_fixture(name: str) -> None:
    assert detect_file(LOGS / name).format is EXPECTED[name][0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_parses_to_its_steps_and_config(name: str) -> None:
    fmt, n_steps, config = EXPECTED[name]
    summary, steps = parse_file(LOGS / name)
    assert summary.format is fmt
    assert steps.schema == pl.Schema(STEP_SCHEMA)
    assert steps.height == n_steps
    for _, launch in steps.group_by("launch"):  # each launch's steps rise; a restart starts another launch
        assert launch["step"].is_unique().all() and launch["step"].is_sorted()
    assert {k: v for k, v in summary.config.stated().items() if k in config} == config


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
    assert module.PARSER.sniff(clean_text(head), name)


def test_every_copied_fixture_is_listed() -> None:
    ours = {p.name for p in LOGS.iterdir() if p.suffix != ".md"} & set(FIXTURES)
    assert ours == set(FIXTURES)
