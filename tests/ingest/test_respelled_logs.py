"""Real logs with their keys, units and labels respelled as the same framework has printed them across its versions
read the same figures: the reader reads a grammar, not one spelling.

- DeepSpeed's launcher printed `cmd = deepspeed ...` bare, and later behind its logger's prefix
  (`[2025-01-02 15:45:22,160] [INFO] [runner.py:607:main] cmd = ...`);
- tqdm prints `2.16it/s` above one step a second and `1.84s/it` below it;
- NeMo Automodel's timestamps end in `Z` or `+00:00` by Python version, and its keys come in either order;
- srun's `--label` puts `0: ` before every line of a Composer log;
- ms-swift logged `"global_step/max_steps": "5/1000"` in 2025 and `"global_step": 5` before;
- NeMo run names are `llama3_8b_8GPU_...` in NeMo 2 recipes and `llama3-8b-...` in NeMo-Run's; a model class is
  `Llama3Config8B` in NeMo 2 and `Llama3ModelProvider8B` in Megatron-Bridge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from ingest.pipeline import preview
from tests.conftest import LOGS

FIGURES = ("step_time_s_median", "tokens_per_s", "tokens_per_s_per_device")
IDENTITY = ("model", "n_devices", "seq_len", "global_batch", "micro_batch", "grad_accum", "precision")


def summary(raw: bytes, name: str) -> tuple[dict[str, Any], dict[str, Any], int]:
    outcome = preview(raw, name)
    steady = outcome.summary.steady_state_json()
    return ({k: steady[k] for k in FIGURES}, {k: outcome.summary.config.get(k) for k in IDENTITY}, outcome.steps)


def _prefix_cmd(text: str) -> str:
    return re.sub(r"(?m)^cmd = ", "[2023-04-18 02:16:30,123] [INFO] [runner.py:555:main] cmd = ", text)


def _bare_cmd(text: str) -> str:
    return re.sub(r"(?m)^\[[^\]]+\] \[INFO\] \[runner\.py:\d+:main\] cmd = ", "cmd = ", text)


def _seconds_per_step(text: str) -> str:
    return re.sub(r"(\d+\.\d+)it/s", lambda m: f"{1 / float(m.group(1)):.2f}s/it", text)


def _offset_timestamps_and_swapped_keys(text: str) -> str:
    text = text.replace('Z", "loss"', '+00:00", "loss"')
    return re.sub(r'"tps": ([\d.]+), "tps_per_gpu": ([\d.]+)', r'"tps_per_gpu": \2, "tps": \1', text)


def _srun_labels(text: str) -> str:
    return "\n".join(f"0: {line}" if line else line for line in text.split("\n"))


def _legacy_swift_steps(text: str) -> str:
    return re.sub(r'"global_step/max_steps": "(\d+)/\d+"', r'"global_step": \1', text)


def _nemo_run_name(text: str) -> str:
    return text.replace("llama3_8b_8GPU_TP1_PP1_CP1_VP1_GBS128_MBS2", "llama3-8b-8gpu-tp1-pp1-gbs128")


def _nemo2_config_class(text: str) -> str:
    return text.replace("llama_provider.Llama3ModelProvider8B", "llama.Llama3Config8B")


CASES: dict[str, tuple[str, Callable[[str], str]]] = {
    "deepspeed bare cmd, then behind its logger": ("dschat_step1_sft_opt1.3b_gbs128.log", _prefix_cmd),
    "deepspeed prefixed cmd, then bare": ("dschat_step2_dpo_opt350m_gbs32.log", _bare_cmd),
    "tqdm it/s and s/it": ("jaong_cpt_large_finetune_windows_console_crlf.txt", _seconds_per_step),
    "automodel timestamps and key order": ("nemo_automodel_llama3_1_8b_hellaswag_pp_h100.jsonl",
                                           _offset_timestamps_and_swapped_keys),
    "composer under srun --label": ("helios113_dyna_composer_h100nvl_console.log", _srun_labels),
    "ms-swift step before 2025": ("msswift_qwen3_8b_lora_deepclima_logging.jsonl", _legacy_swift_steps),
    "nemo run name spellings": ("gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log", _nemo_run_name),
    "model class across versions": ("megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt", _nemo2_config_class),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_log_respelled_as_its_framework_has_printed_it_reads_the_same(case: str) -> None:
    name, respell = CASES[case]
    raw = (LOGS / name).read_bytes()
    text = raw.decode("utf-8")
    respelled = respell(text)
    assert respelled != text, f"{case}: the respelling changed nothing"
    figures, identity, steps = summary(raw, name)
    again, identity_again, steps_again = summary(respelled.encode("utf-8"), name)
    assert steps_again == steps
    assert identity_again == identity
    for key, value in figures.items():
        assert again[key] == (pytest.approx(value, rel=0.01) if value is not None else None), key
