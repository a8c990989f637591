"""Megatron-LM logs: truncated and repeated iteration lines, rank prefixes, NaN losses, restarts, skipped iterations."""

from __future__ import annotations

import math

import polars as pl
import pytest

from ingest.detect import parse_file
from ingest.parsers.megatron import MegatronParser
from tests.ingest.parsers.helpers import LOGS, megatron_line, run_lines


def test_truncated_last_line_is_a_line_problem_with_its_number() -> None:
    lines = [megatron_line(1), megatron_line(2), megatron_line(3)[:80]]
    summary, steps = run_lines(MegatronParser, lines)
    assert steps["step"].to_list() == [1, 2]
    assert [p.line for p in summary.problems] == [3]


def test_interleaved_duplicate_steps_are_counted_once_and_warned() -> None:
    lines = [megatron_line(1, prefix="0: [default0]:"), megatron_line(1, prefix="3: [default3]:"),
             megatron_line(2, prefix="3: [default3]:"), megatron_line(1, prefix="5: [default1]:"),
             megatron_line(2, prefix="0: [default0]:"), megatron_line(3)]
    summary, steps = run_lines(MegatronParser, lines, chunk=2)
    assert steps["step"].to_list() == [1, 2, 3]
    assert any("3 iteration lines repeated" in w for w in summary.warnings)
    assert summary.problems == ()


def test_ansi_and_rank_prefixes_do_not_hide_steps() -> None:
    _, steps = parse_file(LOGS / "primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log")
    assert steps["step"].to_list() == list(range(1, 21))
    assert steps.filter(pl.col("step") == 4)["step_time_s"].item() == pytest.approx(32.0255)  # current, not average
    assert steps.filter(pl.col("step") == 4)["reported_tokens_per_s_per_device"].item() == pytest.approx(14324.6)


def test_nan_losses_survive_as_nan() -> None:
    _, steps = run_lines(MegatronParser, [megatron_line(1), megatron_line(2, loss="NAN"), megatron_line(3)])
    assert math.isnan(steps["loss"][1])
    assert steps.height == 3


def test_restarted_launches_are_each_kept_with_their_own_number_and_a_warning() -> None:
    summary, steps = parse_file(LOGS / "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log")
    by_launch = steps.group_by("launch", maintain_order=True).agg(pl.col("step"))
    assert by_launch.rows() == [(1, [10, 20, 30, 40, 50, 60]), (2, [10]), (3, list(range(10, 320, 10)))]
    assert any("3 launches" in w and "uses launch 3" in w for w in summary.warnings)


def test_skipped_iterations_are_kept_and_noted() -> None:
    summary, steps = parse_file(LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    assert steps.height == 3
    assert any("skipped" in w for w in summary.warnings)


def test_reported_tflops_medians_match_what_the_logs_claim() -> None:
    # cscs 1 GPU: ~335 TFLOP/s/GPU steady state per PROVENANCE; Gaudi first launch ~82; Primus MI355X ~239.
    for name, expected in (("cscs_gh200_gated_attn_te_1gpu_rankprefix.out", 335.0),
                           ("gaudi_hpu_megatron_llama1b_8card_settrace_killed.log", 71.0),  # mostly launch 3
                           ("primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log", 239.5)):
        _, steps = parse_file(LOGS / name)
        assert steps["reported_tflops_per_device"].slice(2).median() == pytest.approx(expected, rel=0.02)
