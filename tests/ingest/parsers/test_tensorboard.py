"""TensorBoard event files: detected by their bytes, read as a stream, each framework's scalar tags mapped to step
columns (the log's own figures into reported_*), and a damaged file refused or read up to its damage, with the
file, the record and the reason named."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import polars as pl
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c  # type: ignore[import-untyped]

from ingest.detect import detect_head, parse_file
from ingest.parsers.base import step_frames
from ingest.parsers.megatron import MegatronParser
from ingest.parsers.tensorboard import TensorBoardParser
from ingest.parsers.torchtitan import TorchtitanParser
from ingest.pipeline import preview
from perfledger.errors import ParseError
from perfledger.records import STEP_SCHEMA
from perfledger.vocabulary import LogFormat
from tests.ingest.parsers.helpers import LOGS, parse_with

MEGATRON = LOGS / "cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0"
MEGATRON_STDOUT = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
TORCHTITAN = LOGS / "qiu023_vlm_447m_8gpu_fsdp2_pp4_torchtitan.events.out.tfevents.1777773634.b008e969124e.595985.0"
TORCHTITAN_STDOUT = LOGS / "qiu023_vlm_447m_sft_8gpu_fsdp2_pp4_rtx5090_ansi.log"
ONLY_FILE_VERSION = LOGS.parent / "tensorboard" / "events.out.tfevents.1774539456.nid006786.251594.0"


def record(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc32c(length)) + payload + struct.pack("<I", masked_crc32c(payload))


def file_version() -> bytes:
    return record(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())


def scalars(step: int, values: dict[str, float], *, tensor: bool = False) -> bytes:
    return record(scalar_event(step, values, tensor=tensor))


def scalar_event(step: int, values: dict[str, float], *, tensor: bool = False) -> bytes:
    """An Event holding scalars at `step` (torch's simple_value, or TF2's 0-d tensor), serialised."""
    summary = summary_pb2.Summary()
    for tag, number in values.items():
        value = summary.value.add(tag=tag)
        if tensor:
            value.tensor.dtype = 1
            value.tensor.float_val.append(number)
        else:
            value.simple_value = number
    return event_pb2.Event(wall_time=2.0, step=step, summary=summary).SerializeToString()  # type: ignore[no-any-return]


def parse_bytes(raw: bytes, name: str = "events.out.tfevents.1.host.1.0") -> tuple[TensorBoardParser, pl.DataFrame]:
    import io

    parser = TensorBoardParser(name)
    frames = list(step_frames(parser, io.BytesIO(raw)))
    return parser, pl.concat(frames) if frames else pl.DataFrame(schema=STEP_SCHEMA)


def largest_gap(both: pl.DataFrame, column: str) -> float:
    gap = (both[column] - both[column + "_printed"]).abs().max()
    assert isinstance(gap, float)
    return gap


# ------------------------------------------------------------------------------------------------ detection


def test_an_event_file_is_detected_by_its_bytes_whatever_its_name() -> None:
    raw = MEGATRON.read_bytes()
    assert detect_head(raw[:1 << 20], file_name="upload.bin") is TensorBoardParser
    assert detect_head(file_version(), file_name="x") is TensorBoardParser


def test_a_text_log_named_like_an_event_file_is_read_as_text() -> None:
    raw = MEGATRON_STDOUT.read_bytes()
    assert detect_head(raw[:1 << 20], file_name="events.out.tfevents.1.host.1.0") is MegatronParser


def test_a_gzipped_event_file_goes_through_the_pipeline() -> None:
    outcome = preview(gzip.compress(TORCHTITAN.read_bytes()), TORCHTITAN.name + ".gz")
    assert outcome.format is LogFormat.TENSORBOARD
    assert outcome.steps == 500


# ------------------------------------------------------------------------------------------------ real files


def test_megatron_event_file_times_every_step_as_its_stdout_log_prints_it() -> None:
    summary, steps = parse_file(MEGATRON)
    _, printed = parse_with(MegatronParser, MEGATRON_STDOUT)
    assert summary.format is LogFormat.TENSORBOARD
    assert steps.height == 344
    both = steps.join(printed, on="step", suffix="_printed").drop_nulls(["step_time_s", "step_time_s_printed"])
    assert both.height == 343
    relative = ((both["step_time_s"] - both["step_time_s_printed"]).abs() / both["step_time_s_printed"]).max()
    assert isinstance(relative, float) and relative < 1e-3  # the log prints milliseconds to one decimal
    assert largest_gap(both, "reported_tflops_per_device") < 0.1


def test_megatron_arguments_written_as_text_summaries_give_the_run_configuration() -> None:
    summary, steps = parse_file(MEGATRON)
    config = summary.config
    assert (config.n_devices, config.seq_len, config.global_batch, config.micro_batch, config.dp) == (40, 8192, 80, 2,
                                                                                                      40)
    assert (config.precision, config.framework, config.num_layers, config.hidden_size) == ("bf16", "megatron-lm", 16,
                                                                                          2048)
    assert config.num_kv_heads == 8 and config.swiglu is True
    assert steps["samples"].unique().to_list() == [80.0]
    assert steps["tokens"].unique().to_list() == [80.0 * 8192]


def test_torchtitan_event_file_holds_the_figures_its_stdout_prints_rounded() -> None:
    summary, steps = parse_file(TORCHTITAN)
    _, printed = parse_with(TorchtitanParser, TORCHTITAN_STDOUT)
    assert summary.config.framework == "torchtitan"
    both = steps.join(printed, on="step", suffix="_printed")
    assert both.height == 500
    assert largest_gap(both, "loss") < 1e-5
    assert largest_gap(both, "reported_tokens_per_s_per_device") <= 0.5
    assert largest_gap(both, "reported_mfu") < 5e-5  # mfu(%) / 100
    assert steps["step_time_s"].is_not_null().all()  # the stdout log has no step time; the event file has


# ------------------------------------------------------------------------------------------- tags by framework


def test_hf_trainer_tags_written_as_simple_values_become_loss_lr_and_grad_norm() -> None:
    raw = file_version() + b"".join(scalars(s, {"train/loss": 2.0 / s, "train/learning_rate": 1e-4,
                                                "train/grad_norm": 0.5, "train/epoch": 0.1 * s}) for s in (10, 20))
    parser, steps = parse_bytes(raw)
    assert steps["step"].to_list() == [10, 20]
    assert steps["loss"].to_list() == pytest.approx([0.2, 0.1])
    assert steps["lr"].to_list() == pytest.approx([1e-4, 1e-4])
    assert parser.finish().config.framework == "transformers"


def test_hf_trainer_run_summary_tags_give_the_runs_samples_per_second() -> None:
    raw = file_version() + scalars(10, {"train/loss": 2.0}) + scalars(10, {
        "train/train_runtime": 100.0, "train/train_samples_per_second": 12.5, "train/total_flos": 1e15})
    parser, steps = parse_bytes(raw)
    results = parser.finish().results
    assert steps.height == 1
    assert [(r.metric, r.value, r.framework) for r in results] == [("samples_per_s", 12.5, "transformers")]
    assert "train_runtime 100 s" in (results[0].note or "")


def test_nemo_step_timing_and_reduced_loss_logged_in_separate_events_make_one_row_per_step() -> None:
    raw = file_version() + b"".join(
        scalars(s, {"reduced_train_loss": 3.0}, tensor=True) + scalars(s, {"train_step_timing in s": 1.5})
        + scalars(s, {"TFLOPS_per_GPU": 400.0}) for s in range(1, 6))
    parser, steps = parse_bytes(raw)
    assert steps.height == 5
    assert steps["step_time_s"].to_list() == [1.5] * 5
    assert steps["reported_tflops_per_device"].to_list() == [400.0] * 5
    assert parser.finish().config.framework == "nemo"


def test_an_unknown_tag_is_counted_not_stored() -> None:
    raw = file_version() + scalars(1, {"lm loss": 2.0, "my/custom": 9.0})
    parser, steps = parse_bytes(raw)
    assert steps.columns == list(STEP_SCHEMA)
    assert parser.finish().meta["other_tag_values"] == 1


# ------------------------------------------------------------------------------------------------ bad files


def test_a_file_with_no_scalars_is_refused_naming_the_file() -> None:
    parser, _steps = parse_bytes(ONLY_FILE_VERSION.read_bytes(), ONLY_FILE_VERSION.name)
    with pytest.raises(ParseError) as refused:
        parser.finish()
    assert str(refused.value).startswith(ONLY_FILE_VERSION.name + ": no training scalars")


def test_a_file_cut_short_keeps_the_steps_before_the_cut_and_names_the_record() -> None:
    whole = file_version() + b"".join(scalars(s, {"lm loss": 2.0, "iteration-time": 1.0}) for s in range(1, 5))
    parser, steps = parse_bytes(whole[:-10])
    summary = parser.finish()
    assert steps["step"].to_list() == [1, 2, 3]
    assert [str(p) for p in summary.problems] == [
        ("events.out.tfevents.1.host.1.0:5: event record 5: cut short (46 of 56 bytes after its header); the last "
        "58 bytes skipped")]
    assert summary.skipped_lines == 1


def test_a_damaged_length_ends_the_reading_there_and_the_rest_is_counted() -> None:
    records = [file_version()] + [scalars(s, {"lm loss": 2.0}) for s in range(1, 6)]
    damaged = bytearray(b"".join(records))
    at = sum(map(len, records[:3]))  # record 4 (step 3)
    damaged[at] ^= 0x01
    parser, steps = parse_bytes(bytes(damaged))
    summary = parser.finish()
    assert steps["step"].to_list() == [1, 2]
    assert summary.problems[0].line == 4
    assert "its length fails its checksum" in summary.problems[0].reason
    assert any("damaged" in w for w in summary.warnings)


def test_an_unreadable_payload_naming_a_step_tag_is_skipped_with_its_record_number() -> None:
    raw = file_version() + record(b"\x0a\x07lm loss\xff\xff\xff\xff") + scalars(1, {"lm loss": 2.0})
    parser, steps = parse_bytes(raw)
    summary = parser.finish()
    assert steps.height == 1
    assert summary.problems[0].line == 2 and "not a readable Event" in summary.problems[0].reason


def test_a_record_naming_no_step_tag_is_counted_and_never_decoded() -> None:
    raw = file_version() + record(b"\xff\xff\xff\xff") + scalars(1, {"learning-rate vs samples": 2.0, "x": 1.0}) \
        + scalars(1, {"lm loss": 2.0})
    parser, steps = parse_bytes(raw)
    summary = parser.finish()
    assert steps.height == 1 and not summary.problems
    assert summary.meta["event_records"] == 4
    assert summary.meta["records_of_other_tags"] == 3  # the file-version record, the garbage, the other tags


def test_a_non_finite_figure_is_not_stored_but_a_diverged_loss_is() -> None:
    raw = file_version() + scalars(1, {"lm loss": float("nan"), "iteration-time": float("inf"), "throughput": 5.0})
    _, steps = parse_bytes(raw)
    assert steps["step_time_s"].to_list() == [None]
    assert steps["loss"].is_nan().to_list() == [True]


def test_the_parser_is_not_fed_lines(tmp_path: Path) -> None:
    with pytest.raises(ParseError):
        TensorBoardParser("x").feed(["text"], 1)
