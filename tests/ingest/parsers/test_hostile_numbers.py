"""Numbers past every range in real logs (each once a crash or a stored infinity the fuzz test found): the file
still parses, the number becomes null or its line a counted skip, and nothing non-finite reaches a step or result."""

from __future__ import annotations

import re

import pytest

from ingest.pipeline import prepare
from tests.conftest import LOGS
from tests.ingest.mutations import PARSED, Case, run_case

BIG = "9" * 400


def edited(name: str, pattern: str, value: str, count: int = 1) -> bytes:
    """The fixture with the first `count` matches of pattern's group 1 replaced by value."""
    text = (LOGS / name).read_text(encoding="utf-8", errors="replace")
    edits = list(re.finditer(pattern, text))[:count]
    assert edits, f"{pattern} not in {name}"
    for m in reversed(edits):
        text = text[: m.start(1)] + value + text[m.end(1):]
    return text.encode()


CASES = {
    "torchtitan step of 2**64": ("qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log", r"step:\s+(\d+)", str(2**64)),
    "torchtitan mesh dimension of 400 digits": ("qiu023_vlm_447m_sft_8gpu_fsdp2_pp4_rtx5090_ansi.log", r"\w=(\d+)", BIG),
    "Megatron skipped iterations of 400 digits": ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out",
                                                  r"number of skipped iterations:\s+(\d+)", BIG),
    "Megatron nan iterations of 1e309": ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out",
                                         r"number of nan iterations:\s+(\d+)", "1e309"),
    "Megatron loss of inf": ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out", r"lm loss: (\S+)", "inf"),
    "Megatron global batch of 1e309": ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out",
                                       r"global batch size:\s+(\d+)", "1e309"),
    "Megatron max allocated of 400 digits": ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out",
                                             r"max allocated: ([\d.]+)", BIG),
    "MLPerf samples_count of 2e19": ("nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt",
                                     r'"samples_count": (\d+)', "2e19"),
    "MLPerf global batch of 2**64": ("nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt",
                                     r'"key": "global_batch_size", "value": (\d+)', str(2**64)),
    "DeepSpeed step of 2**64": ("dschat_step1_sft_opt1.3b_gbs128.log", r"\[Rank 0\] step=(\d+)", str(2**64)),
    "HF trainer_state step of 2**63": ("jaong_cpt_large_finetune_trainer_state.json", r'"step": (\d+)', str(2**63)),
    "HF trainer_state step of -2**63-1": ("jaong_cpt_large_finetune_trainer_state.json", r'"step": (\d+)',
                                          str(-2**63 - 1)),
    "HF train_runtime of inf": ("jaong_cpt_large_finetune_windows_console_crlf.txt",
                                r"train_runtime\s+= (\S+)", "inf:00:00"),
}


@pytest.mark.parametrize("what", sorted(CASES))
def test_a_number_past_its_range_is_null_or_a_skipped_line(what: str) -> None:
    name, pattern, value = CASES[what]
    result = run_case(Case("", name, what, edited(name, pattern, value, count=3)))
    assert result.outcome == PARSED, result.detail


def test_nemo_tflops_of_1e309_is_not_a_result() -> None:
    name = "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
    raw = (LOGS / name).read_bytes()
    hostile = raw + b"\nTFLOPs per sec per GPU=1e309\nTFLOPs per sec per GPU=412.5\n"
    with prepare(raw, name) as clean, prepare(hostile, name) as run:
        reported = [r.value for r in run.results if r.metric == "model_tflops_per_device" and r.evidence == "reported"]
        before = [r.value for r in clean.results if r.metric == "model_tflops_per_device" and r.evidence == "reported"]
        assert reported == [*before, 412.5]


def test_a_torchtitan_step_past_64_bits_is_a_counted_skip() -> None:
    name = "qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log"
    with prepare((LOGS / name).read_bytes(), name) as clean, \
            prepare(edited(name, r"step:\s+(\d+)", str(2**64)), name) as broken:
        assert broken.steps.rows == clean.steps.rows - 1
        assert broken.skipped_lines == clean.skipped_lines + 1
        assert any("64 bits" in p for p in broken.problems)
