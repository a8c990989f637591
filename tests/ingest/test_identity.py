"""A run's identity comes from everything its log says, each field with where it came from: run names, provider
classes and model paths resolved through the catalog, launcher lines behind a logger's prefix, per-rank lines,
system descriptions; two stated values are both kept and named; a field the log does not state stays empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest.config_lines import Statement
from ingest.identity import IDENTITY_FIELDS, precision_of, resolve, workload_of
from ingest.pipeline import preview
from perfledger.frameworks import load_frameworks
from perfledger.records import RunConfig
from tests.conftest import LOGS


def read(name: str) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
    outcome = preview((LOGS / name).read_bytes(), name)
    return outcome.summary.config, outcome.summary.identity, outcome.summary.warnings


@pytest.mark.parametrize(("name", "model", "printed"), [
    ("gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log", "llama3-8b", "llama3_8b_8GPU_TP1_PP1_CP1_VP1_GBS128_MBS2"),
    ("gcp_a4_b200_llama3_70b_64gpu_fp8_nemo2504.log", "llama3-70b", "llama3_70b_64gpus_tp2_pp4_cp1_vp5_gbs128_mbs1"),
    ("megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt", "llama3-8b",
     "megatron.bridge.models.llama.llama_provider.Llama3ModelProvider8B"),
    ("dschat_step2_dpo_opt350m_gbs32.log", "opt-350m", "facebook/opt-350m"),
])
def test_the_model_a_log_names_by_run_name_class_or_path_is_linked(name: str, model: str, printed: str) -> None:
    config, identity, _ = read(name)
    assert (config["model"], config["model_as_printed"]) == (model, printed)
    assert identity["model"]["from"] == "log" and identity["model"]["where"].startswith("line ")
    assert identity["model"]["confidence"]


def test_two_models_named_are_asked_not_guessed() -> None:
    said = [Statement("run_name", "llama3_8b_pretrain", "line 3: name: llama3_8b_pretrain", "*"),
            Statement("model", "Qwen/Qwen2.5-7B", "line 9: model_name_or_path: Qwen/Qwen2.5-7B", "*")]
    found = resolve(RunConfig(), said, reader="key_value", frameworks=load_frameworks())
    assert found.config.model is None
    assert found.config.model_as_printed == "Qwen/Qwen2.5-7B | llama3_8b_pretrain"
    assert found.provenance["model"]["confidence"] == "ambiguous"
    assert any("more than one model" in w and "runs set" in w for w in found.warnings)


def test_a_launcher_command_behind_a_loggers_prefix_is_read() -> None:
    """`[2025-01-02 15:45:22,160] [INFO] [runner.py:607:main] cmd = ... --gradient_accumulation_steps 2`: missed
    behind its prefix, the accumulation was stored as 1 and the sequence length, micro batch and model lost."""
    config, identity, _ = read("dschat_step2_dpo_opt350m_gbs32.log")
    assert (config["grad_accum"], config["micro_batch"], config["seq_len"], config["strategy"]) == (2, 2, 512, "zero0")
    assert "cmd = " in identity["grad_accum"]["where"] or identity["grad_accum"]["where"].startswith("line 3")
    assert config["global_batch"] == 32 and config["n_devices"] == 8


def test_two_sequence_lengths_are_kept_and_named() -> None:
    config, identity, warnings = read("megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt")
    other = {4096: 8192, 8192: 4096}[config["seq_len"]]
    assert [a["value"] for a in identity["seq_len"]["also"]] == [other]
    assert any("sequence lengths" in w and str(other) in w for w in warnings)


@pytest.mark.parametrize(("name", "devices", "said"), [
    ("nebius_h200_n64_llama31_405b_v5.1_result_1.txt", 512, "line 1947: 236: Initializing distributed"),
    ("cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt", 64, "counted: 64 lines like"),
    ("supermicro_8xmi355x_llama2_70b_lora_v5.1_result_0.txt", 8, "counted: line 3: [Gloo] Rank 0 is connected to 7"),
    ("nemo_automodel_llama3_1_8b_hellaswag_pp_h100.jsonl", 4, "derived: the log's per-device tokens/s"),
])
def test_devices_come_from_per_rank_lines_banners_and_rates(name: str, devices: int, said: str) -> None:
    config, identity, _ = read(name)
    assert config["n_devices"] == devices
    assert identity["n_devices"]["where"].startswith(said)


def test_a_placeholder_mlperf_platform_takes_the_accelerator_from_the_system_description() -> None:
    config, identity, warnings = read("lambda_gb300_n18_llama31_8b_v5.1_result_1.txt")
    assert (config["accelerator"], config["n_devices"]) == ("gb300", 72)
    assert "accelerator_model_name" in identity["accelerator"]["where"]
    assert not any("accelerator is not stated" in w for w in warnings)


def test_every_identity_field_with_a_value_says_where_it_came_from() -> None:
    for name in ("gcp_a4_b200_qwen2_5_7b_8gpu_nemo2504.log", "verl_ppo_dp2_gpu_per_step_parsed.csv",
                 "chenzihua_nanogpt_shakespeare_char_termux_nan.log"):
        config, identity, _ = read(name)
        stated = {f for f in IDENTITY_FIELDS if config.get(f) is not None}
        assert stated <= set(identity), name
        for entry in identity.values():
            assert entry["from"] in ("log", "hint", "default") and entry["where"]


def test_a_field_the_log_does_not_state_stays_empty_and_an_assumed_workload_says_so() -> None:
    config, identity, _ = read("verl_ppo_dp2_gpu_per_step_parsed.csv")
    assert config.get("accelerator") is None and config.get("n_devices") is None and config.get("model") is None
    assert config["workload"] == "rlhf" and identity["workload"]["from"] == "log"  # verl trains RL only
    config, identity, _ = read("chenzihua_nanogpt_shakespeare_char_termux_nan.log")
    assert identity["workload"] == {"from": "default", "where": "the log states no workload: pretraining assumed"}


def test_a_hint_is_marked_as_the_users() -> None:
    outcome = preview((LOGS / "dschat_step2_dpo_opt350m_gbs32.log").read_bytes(), "dpo.log",
                      RunConfig(accelerator="h100-sxm"))
    assert outcome.summary.identity["accelerator"] == {"from": "hint", "where": "--accelerator h100-sxm"}


@pytest.mark.parametrize(("printed", "precision"), [("bf16-mixed", "bf16"), ("Precision.AMP_BF16", "bf16"),
                                                    ("bfloat16", "bf16"), ("16-mixed", "fp16"), ("float32", "fp32"),
                                                    ("hybrid", "fp8"), ("torch.float16", "fp16")])
def test_precisions_as_frameworks_print_them(printed: str, precision: str) -> None:
    assert precision_of(printed) == precision


@pytest.mark.parametrize(("printed", "workload"), [
    ("lora_finetune", "lora_finetune"), ("qlora", "lora_finetune"), ("LoRA", "lora_finetune"), ("DoRA", "lora_finetune"),
    ("SFTTrainer", "sft"), ("ppo", "rlhf"), ("grpo", "rlhf"), ("sft", "sft"), ("none", None)])
def test_workloads_as_frameworks_print_them(printed: str, workload: str | None) -> None:
    assert workload_of(printed) == workload


def test_config_keys_are_read_in_every_common_spelling(tmp_path: Path) -> None:
    from ingest.config_lines import ConfigLines

    lines = ["--seq-length 4096", "  seq_length: 4096", '{"seq_length": 4096}', "cfg/seq_length=4096",
             "model.seq_length = 4096", "'seq_length': 4096", "max_seq_length: 9", "--bf16", "fp16=False"]
    scan = ConfigLines(load_frameworks())
    scan.feed(scan.prepare("\n".join(lines), 1))
    stated = {(s.field, s.value): s.times for s in scan.statements()}
    assert stated[("seq_len", 4096)] == 6 and stated[("seq_len", 9)] == 1
    assert ("precision", "bf16") in stated and ("precision", "fp16") not in stated
