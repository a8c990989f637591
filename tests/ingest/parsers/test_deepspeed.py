"""DeepSpeed logs: Megatron-DeepSpeed tokens per step, DeepSpeed-Chat RLHF steps and their parts."""

from __future__ import annotations

import pytest

from ingest.detect import parse_file
from ingest.parsers.deepspeed import DeepSpeedParser
from ingest.pipeline import preview
from tests.ingest.parsers.helpers import LOGS, run_lines


def test_tokens_come_from_consumed_tokens_deltas_when_printed() -> None:
    _, steps = parse_file(LOGS / "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log")
    assert steps["tokens"].to_list()[1:] == [256 * 2048] * (steps.height - 1)


RLHF = LOGS / "dschat_step3_rlhf_actor_opt1.3b_critic_opt350m_gbs64.log"


def test_rlhf_steps_come_from_the_e2e_latency_lines_with_their_generation_and_training_parts() -> None:
    summary, steps = parse_file(RLHF)
    assert steps.height == 476  # one per E2E line; the engines' 47 timer lines time only their training
    assert steps["step"].to_list() == list(range(476))
    first = steps.row(0, named=True)
    assert (first["step_time_s"], first["generation_s"], first["training_s"]) == (7.99, 5.26, 2.52)
    assert steps["samples"].unique().to_list() == [64]  # CurSamplesPerSec 8.01 x 7.99 s, 4 per device x 16
    assert steps["tokens"].unique().to_list() == [64 * (256 + 256)]
    assert (summary.config.workload, summary.config.seq_len, summary.config.global_batch) == ("rlhf", 512, 64)


def test_skipped_optimizer_steps_are_said_to_be_counted_in_the_step_numbers_for_each_engine() -> None:
    # 10 PPO steps print `step=10, skipped=4`: DeepSpeed counts a skipped step in its step number
    summary, _ = parse_file(RLHF)
    note = next(w for w in summary.warnings if w.startswith("DeepSpeed skipped"))
    assert note.startswith("DeepSpeed skipped 7 and 7 optimizer steps for fp16 overflow on its 2 engines")
    assert "the step numbers count them" in note and "only applied" not in note


def test_rlhf_e2e_lines_number_steps_on_over_epochs_and_ignore_timer_lines_in_any_chunking() -> None:
    e2e = ("|E2E latency=4.00s |Gather latency=0.00s (0.00%) |Generate time=3.00s (75.00%) |Training time=0.80s "
           "(20.00%) |Others=0.20 (5.00%)|CurSamplesPerSec=2.00 |AvgSamplesPerSec=2.00")
    timer = ("[2023-04-18 08:48:36,058] [INFO] [timer.py:199:stop] epoch=0/micro_step=2/global_step=2, "
             "RunningAvgSamplesPerSec=86.7, CurrSamplesPerSec=78.8, MemAllocated=10.77GB, MaxMemAllocated=20.55GB")
    lines = [("cmd = deepspeed main.py --per_device_generation_batch_size 4 --max_prompt_seq_len 128 "
              "--max_answer_seq_len 128"),
             "epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.2", e2e, "epoch: 0|step: 1|ppo_ep: 1|act_loss: 0.2", timer, e2e,
             "epoch: 1|step: 0|ppo_ep: 1|act_loss: 0.2", e2e]
    for chunk in (1, 2, 8):
        _, steps = run_lines(DeepSpeedParser, lines, chunk)
        assert steps["step"].to_list() == [0, 1, 2]
        assert steps["samples"].to_list() == [8.0] * 3  # 2.00/s x 4.00 s, a multiple of the per-device batch
        assert steps["tokens"].to_list() == [8.0 * 256] * 3


def test_rlhf_summary_gives_the_generation_share_and_samples_per_s_of_the_steady_window() -> None:
    out = preview(RLHF.read_bytes(), RLHF.name).as_json()
    steady = out["steady_state"]
    assert 0.6 < steady["generation_share"] < 0.75 and 0.2 < steady["training_share"] < 0.35
    assert steady["generation_s_median"] == pytest.approx(2.52)
    # the log's own running average over the whole run (warm-up included) ends at 16.79 samples/s
    assert steady["samples_per_s"] == pytest.approx(16.79, rel=0.01)
    assert {"metric": "samples_per_s", "unit": "samples/s"}.items() <= next(
        r for r in out["results"] if r["metric"] == "samples_per_s").items()
