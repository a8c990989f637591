"""Figures the log printed itself sit beside the recomputed ones, with the difference and the convention."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.pipeline import preview
from perfledger.records import RunConfig
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "fixtures" / "logs" / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_the_json_carries_the_printed_tflops_the_difference_and_the_convention_that_reproduces_it() -> None:
    out = preview(LOG.read_bytes(), LOG.name).as_json()
    reported, ours = out["reported"], out["steady_state"]["model_tflops_per_device"]
    assert reported["reported_tflops_per_device"] == pytest.approx(336.7)
    assert reported["diff_tflops_per_device"] == pytest.approx((ours - 336.7) / 336.7)
    assert reported["explained_by_formula"] == "causal"  # Megatron halves causal attention since 2025-03
    assert abs(reported["conventions"]["causal"] / 336.7 - 1) < 0.02
    assert set(reported["conventions"]) >= {"default", "causal", "embeddings"}


def test_the_text_output_prints_the_log_figure_beside_ours(tmp_path: Path) -> None:
    out = run("ingest", str(LOG), "--db", f"duckdb:///{tmp_path / 's.duckdb'}")
    assert out.returncode == 0, out.stderr
    assert "printed by the log: TFLOP/s/device 336.7 (recomputed differs by +5.8%)" in out.stdout
    assert "the log counts FLOPs as 'causal-halved attention" in out.stdout


LOGS = ROOT / "tests" / "fixtures" / "logs"


def test_nemo_end_of_run_tflops_sits_beside_ours_and_says_it_was_printed_over_the_whole_run() -> None:
    log = LOGS / "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"
    out = preview(log.read_bytes(), log.name).as_json()
    reported, ours = out["reported"], out["steady_state"]["model_tflops_per_device"]
    assert reported["reported_tflops_per_device"] == pytest.approx(1116.07)
    assert reported["diff_tflops_per_device"] == pytest.approx((ours - 1116.07) / 1116.07)
    assert "whole run" in reported["printed_over"]["tflops_per_device"]


def test_nemo_failure_value_minus_one_is_not_stored_as_a_figure() -> None:
    log = LOGS / "gcp_a4_b200_qwen3_30b_16gpu_nemo2504.log"
    out = preview(log.read_bytes(), log.name).as_json()
    assert not [r for r in out["results"] if r["evidence"] == "reported"]
    assert "reported_tflops_per_device" not in out["reported"]
    assert any("TFLOPs per sec per GPU=-1.00" in w and "not stored" in w for w in out["warnings"])


HF = LOGS / "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out"


def test_hf_samples_per_s_becomes_tokens_per_s_per_device_only_with_seq_len_and_devices() -> None:
    plain = preview(HF.read_bytes(), HF.name).as_json()
    assert "reported_tokens_per_s_per_device" not in plain["reported"]
    assert [r["value"] for r in plain["results"] if r["metric"] == "samples_per_s"] == [3.663]
    hinted = preview(HF.read_bytes(), HF.name, RunConfig(seq_len=1024, n_devices=64)).as_json()
    assert hinted["reported"]["reported_tokens_per_s_per_device"] == pytest.approx(3.663 * 1024 / 64)
    assert hinted["reported"]["printed_over"]["tokens_per_s_per_device"].startswith("derived")
    derived = [r for r in hinted["results"] if r["metric"] == "tokens_per_s_per_device"]
    assert [(r["evidence"], r["value"]) for r in derived] == [("derived", pytest.approx(3.663 * 1024 / 64))]


PROFILER = """cmd = deepspeed main.py --per_device_train_batch_size 8 --max_seq_len 512
[2023-04-18 07:59:12,100] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[9.6e-06]
[2023-04-18 07:59:12,101] [INFO] [timer.py:199:stop] epoch=0/micro_step=10/global_step=10, \
RunningAvgSamplesPerSec=60.0, CurrSamplesPerSec=64.0, MemAllocated=4.3GB, MaxMemAllocated=12.1GB

-------------------------- DeepSpeed Flops Profiler --------------------------
Profile Summary at step 10:
fwd FLOPS per GPU = fwd flops per GPU / fwd latency:                    81.9 TFLOPS
fwd+bwd FLOPS per GPU = 3 * fwd flops per GPU / (fwd+bwd latency):      102.0 TFLOPS
FLOPS per GPU = 3 * fwd flops per GPU / iter latency:                   100.41 TFLOPS
"""


def test_deepspeed_flops_profiler_tflops_per_gpu_is_kept_as_the_logs_own_figure_of_its_step() -> None:
    out = preview(PROFILER.encode(), "ds.log").as_json()
    printed = [r for r in out["results"] if r["evidence"] == "reported"]
    assert [(r["metric"], r["value"]) for r in printed] == [("model_tflops_per_device", 100.41)]
    assert "step 10" in (printed[0]["note"] or "")
    assert out["reported"]["reported_tflops_per_device"] == 100.41
    assert "profiler" in out["reported"]["printed_over"]["tflops_per_device"]


def test_the_text_output_says_a_printed_figure_covers_the_whole_run(tmp_path: Path) -> None:
    log = LOGS / "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"
    out = run("ingest", str(log), "--db", f"duckdb:///{tmp_path / 's.duckdb'}")
    assert out.returncode == 0, out.stderr
    assert "printed by the log: TFLOP/s/device 1,116 (recomputed differs by -1.5%) [NeMo's" in out.stdout
