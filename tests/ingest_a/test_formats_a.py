"""Megatron family, DeepSpeed, NeMo, DLLogger and golden-values parsers, on the real logs in tests/fixtures/logs."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ingest.detect import detect_file, detect_format, parse_file
from ingest.parsers.deepspeed import DeepSpeedParser
from ingest.parsers.dllogger import DLLoggerParser
from ingest.parsers.megatron import MegatronParser
from ingest.parsers.megatron_golden import MegatronGoldenParser
from ingest.parsers.nemo import NemoParser
from perfledger.errors import ParseError, UnknownFormat
from perfledger.records import STEP_SCHEMA
from perfledger.vocabulary import LogFormat

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"

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
    "gpu_recipes_dllogger_example_gpt175b.json": (LogFormat.DLLOGGER, 50, {"num_layers": 96, "tp": 4, "pp": 8}),
}
PARSERS = (MegatronParser, DeepSpeedParser, NemoParser, DLLoggerParser, MegatronGoldenParser)


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


def test_random_text_is_unknown_and_the_error_lists_every_format() -> None:
    with pytest.raises(UnknownFormat) as err:
        detect_format("lorem ipsum dolor sit amet\n" * 50, file_name="notes.txt")
    for fmt in LogFormat:
        assert fmt.value in str(err.value)


def _megatron_line(step: int, loss: str = "2.5E+00", prefix: str = "") -> str:
    return (f"{prefix} [2026-04-15 11:19:02] iteration {step:8d}/     500 | consumed samples: {step * 8:12d} | "
            f"elapsed time per iteration (ms): 1500.0 | throughput per GPU (TFLOP/s/GPU): 100.0 | learning rate: "
            f"1.000000E-04 | global batch size:     8 | lm loss: {loss} | loss scale: 1.0 | grad norm: 1.000 | "
            f"number of skipped iterations:   0 | number of nan iterations:   0 |")


def _run(parser_cls: type, lines: list[str], chunk: int = 3) -> tuple[object, pl.DataFrame]:
    parser = parser_cls("t.log")
    frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
    return parser.finish(), pl.concat(frames)


def test_truncated_last_line_is_a_line_problem_with_its_number() -> None:
    lines = [_megatron_line(1), _megatron_line(2), _megatron_line(3)[:80]]
    summary, steps = _run(MegatronParser, lines)
    assert steps["step"].to_list() == [1, 2]
    assert [p.line for p in summary.problems] == [3]


def test_interleaved_duplicate_steps_are_counted_once_and_warned() -> None:
    lines = [_megatron_line(1, prefix="0: [default0]:"), _megatron_line(1, prefix="3: [default3]:"),
             _megatron_line(2, prefix="3: [default3]:"), _megatron_line(1, prefix="5: [default1]:"),
             _megatron_line(2, prefix="0: [default0]:"), _megatron_line(3)]
    summary, steps = _run(MegatronParser, lines, chunk=2)
    assert steps["step"].to_list() == [1, 2, 3]
    assert any("3 iteration lines repeated" in w for w in summary.warnings)
    assert summary.problems == ()


def test_ansi_and_rank_prefixes_do_not_hide_steps() -> None:
    summary, steps = parse_file(LOGS / "primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log")
    assert steps["step"].to_list() == list(range(1, 21))
    assert steps.filter(pl.col("step") == 4)["step_time_s"].item() == pytest.approx(32.0255)  # current, not average
    assert steps.filter(pl.col("step") == 4)["reported_tokens_per_s_per_device"].item() == pytest.approx(14324.6)


def test_nan_losses_survive_as_nan() -> None:
    summary, steps = _run(MegatronParser, [_megatron_line(1), _megatron_line(2, loss="NAN"), _megatron_line(3)])
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


def test_tokens_come_from_consumed_tokens_deltas_when_printed() -> None:
    _, steps = parse_file(LOGS / "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log")
    assert steps["tokens"].to_list()[1:] == [256 * 2048] * (steps.height - 1)


def test_reported_tflops_medians_match_what_the_logs_claim() -> None:
    # cscs 1 GPU: ~335 TFLOP/s/GPU steady state per PROVENANCE; Gaudi first launch ~82; Primus MI355X ~239.
    for name, expected in (("cscs_gh200_gated_attn_te_1gpu_rankprefix.out", 335.0),
                           ("gaudi_hpu_megatron_llama1b_8card_settrace_killed.log", 71.0),  # mostly launch 3
                           ("primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log", 239.5)):
        _, steps = parse_file(LOGS / name)
        assert steps["reported_tflops_per_device"].slice(2).median() == pytest.approx(expected, rel=0.02)


def test_nemo_reports_its_end_of_run_tflops_as_a_result() -> None:
    summary, steps = parse_file(LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log")
    assert [r.value for r in summary.results] == [1753.06]
    assert steps["step_time_s"][-1] == pytest.approx(4.32860221862793)  # the DLL value, not tqdm's 4.330


def test_nemo_reads_tqdm_frames_split_by_carriage_returns_without_dll() -> None:
    frame = ("Epoch 0: :  10%| | 2/20 [00:25<03:50, v_num=None, reduced_train_loss=11.00, global_step={}.000, "
             "consumed_samples=256.0, train_step_timing in s=12.80]")
    line = "\r".join(frame.format(s) for s in (0, 0, 1, 2))
    summary, steps = _run(NemoParser, ["[NeMo I 2025-06-12 nemo_logging:393] start", line])
    assert steps["step"].to_list() == [0, 1, 2]


def test_parsers_refuse_a_file_without_steps_with_a_parse_error() -> None:
    for parser_cls in PARSERS:
        parser = parser_cls("empty.log")
        parser.feed(["hello", "world"], 1)
        with pytest.raises(ParseError):
            parser.finish()


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.text(alphabet=hs.characters(codec="utf-8"), max_size=200), max_size=20),
       hs.sampled_from(PARSERS))
def test_arbitrary_text_gives_frames_or_parse_error(lines: list[str], parser_cls: type) -> None:
    seeded = lines + [_megatron_line(1)[: len(lines) * 7]]
    parser = parser_cls("fuzz.log")
    try:
        frame = parser.feed(seeded, 1)
        assert frame.schema == pl.Schema(STEP_SCHEMA)
        parser.finish()
    except ParseError:
        pass
