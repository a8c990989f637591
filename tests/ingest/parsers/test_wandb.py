"""W&B run history exports (CSV from run.history() or a chart, JSONL wandb-history.jsonl), read by the record reader:
detected by their header or rows, figures read through the key vocabulary with the rows of every framework their
names identify, wall clock where no step time is logged, and a line that does not fit skipped as FILE:LINE: reason."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from ingest.detect import detect_file, parse_file, weigh
from ingest.parsers._common import concat_steps
from ingest.parsers.metrics_file import MetricsFileParser
from ingest.pipeline import prepare
from perfledger.errors import ParseError
from perfledger.records import ParseSummary
from tests.ingest.parsers.helpers import LOGS

CSV = LOGS / "oraby8_tts_grpo_wandb_history.csv"


def feed(lines: list[str], chunk: int = 2) -> tuple[ParseSummary, pl.DataFrame]:
    parser = MetricsFileParser("run.jsonl")
    frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
    summary = parser.finish()
    return summary, concat_steps([*frames, parser.final_steps()])


def row(**values: object) -> str:
    return json.dumps(values)


def composer_row(step: int, runtime: float, loss: float, **extra: object) -> str:
    return row(**{"_step": step, "_runtime": runtime, "_timestamp": 1.7e9 + runtime, "loss/train/total": loss,
                  "time/token": step * 4096, "time/sample": step * 2, **extra})


def test_history_csv_is_detected_as_a_record_stream() -> None:
    assert detect_file(CSV) is MetricsFileParser


def test_history_csv_steps_take_the_framework_step_and_wall_clock_between_rows() -> None:
    summary, steps = parse_file(CSV)
    assert steps.height == 41  # row 0 holds only trainable_parameters: not a training row
    step2 = steps.filter(pl.col("step") == 2).row(0, named=True)
    assert step2["loss"] == pytest.approx(0.17726387083530426)
    assert step2["lr"] == pytest.approx(2.666666666666667e-07)
    assert step2["step_time_s"] == pytest.approx(103.281714478 - 68.508690712)
    assert steps.filter(pl.col("step") == 1)["step_time_s"][0] is None  # nothing before it to measure from
    assert not summary.problems
    assert any("wall clock" in w for w in summary.warnings)


def test_history_csv_prepares_with_its_median_step_time() -> None:
    with prepare(CSV.read_bytes(), CSV.name) as run:
        assert run.format.value == "metrics"
        assert run.summary["step_time_s_median"] == pytest.approx(31.0, rel=0.01)


def test_jsonl_rows_map_composer_speed_figures_into_reported_columns() -> None:
    lines = [composer_row(s, 10.0 * s, 2.0, **{"throughput/batches_per_sec": 0.1,
                                                 "throughput/device/tokens_per_sec": 409.6,
                                                 "throughput/device/mfu": 0.41,
                                                 "throughput/device/flops_per_sec": 1.25e14}) for s in range(1, 6)]
    assert weigh("\n".join(lines), file_name="wandb-history.jsonl").parser is MetricsFileParser
    summary, steps = feed(lines)
    last = steps.filter(pl.col("step") == 5).row(0, named=True)
    assert last["step_time_s"] == pytest.approx(10.0)  # 1 / batches_per_sec, not wall clock
    assert last["tokens"] == pytest.approx(4096)  # the cumulative time/token over the steps between rows
    assert last["samples"] == pytest.approx(2)
    assert last["reported_tokens_per_s_per_device"] == pytest.approx(409.6)
    assert last["reported_mfu"] == pytest.approx(0.41)
    assert last["reported_tflops_per_device"] == pytest.approx(125.0)
    assert summary.config.framework == "composer"
    assert not any("wall clock" in w for w in summary.warnings)


def test_jsonl_wall_clock_spans_chunk_boundaries_and_logging_intervals() -> None:
    lines = [row(_step=k, _runtime=100.0 + 30.0 * k, **{"train/global_step": 10 * k, "train/loss": 1.0})
             for k in range(1, 5)]
    _, steps = feed(lines, chunk=1)
    assert steps["step"].to_list() == [10, 20, 30, 40]
    assert steps["step_time_s"].to_list()[1:] == pytest.approx([3.0, 3.0, 3.0])  # 30 s over 10 steps


def test_hf_trainer_eval_and_summary_rows_are_not_steps() -> None:
    lines = [row(_step=0, _runtime=5.0, **{"train/global_step": 10, "train/loss": 2.0, "train/learning_rate": 1e-4}),
             row(_step=1, _runtime=6.0, **{"train/global_step": 10, "eval/loss": 2.1}),
             row(_step=2, _runtime=9.0, **{"train/global_step": 20, "train/loss": 1.9, "train/grad_norm": 0.5}),
             row(_step=3, _runtime=9.5, **{"train/global_step": 20, "train/train_runtime": 9.5})]
    summary, steps = feed(lines)
    assert steps["step"].to_list() == [10, 20]
    assert steps["grad_norm"].to_list() == [None, 0.5]
    assert summary.config.framework == "transformers"  # one name for the HF Trainer whatever file it wrote


def test_torchtitan_and_megatron_names_keep_their_units() -> None:
    titan = [row(_step=s, _runtime=float(s), step=s, **{"loss_metrics/global_avg_loss": 3.0, "throughput(tps)": 5000,
                                                         "tflops": 101.2, "mfu(%)": 10.3,
                                                         "time_metrics/end_to_end(s)": 0.8}) for s in (1, 2)]
    _, steps = feed(titan)
    assert steps["reported_mfu"].to_list() == pytest.approx([0.103, 0.103])
    assert steps["step_time_s"].to_list() == pytest.approx([0.8, 0.8])
    megatron = [row(_step=s, _runtime=float(s), iteration=s, **{"lm loss": 3.0, "iteration-time": 1.5,
                                                                 "throughput": 312.0}) for s in (1, 2)]
    _, steps = feed(megatron)
    assert steps["reported_tflops_per_device"].to_list() == pytest.approx([312.0, 312.0])


def test_a_broken_jsonl_line_is_skipped_with_its_line_number() -> None:
    lines = [composer_row(1, 10.0, 2.0), '{"_step": 2, "_runtime": 20.0, "loss/train/tot', composer_row(3, 30.0, 1.5)]
    summary, steps = feed(lines, chunk=3)
    assert steps["step"].to_list() == [1, 3]
    assert str(summary.problems[0]).startswith("run.jsonl:2: not a JSON object")
    assert summary.skipped_lines == 1


def test_a_diverged_nan_loss_in_jsonl_stays_nan() -> None:
    lines = [composer_row(1, 10.0, 2.0), composer_row(2, 20.0, 2.0).replace('"loss/train/total": 2.0',
                                                                           '"loss/train/total": NaN')]
    _, steps = feed(lines)
    assert math.isnan(steps.filter(pl.col("step") == 2)["loss"][0])


def test_a_csv_row_with_the_wrong_field_count_is_skipped_with_its_line_number() -> None:
    lines = ["_step,_runtime,_timestamp,train/loss", "1,10.0,1.7e9,2.0", "2,20.0,1.7e9", "3,30.0,1.7e9,1.8"]
    summary, steps = feed(lines)
    assert steps["step"].to_list() == [1, 3]
    assert str(summary.problems[0]) == "run.jsonl:3: 3 fields where the header has 4; skipped"


def test_a_chart_export_of_several_runs_reads_the_first_run() -> None:
    lines = ['"Step","a - train/loss","a - train/loss__MIN","a - train/loss__MAX","b - train/loss"',
             '"1","2.5","2.5","2.5","9.0"', '"2","2.4","2.4","2.4","9.0"']
    assert weigh("\n".join(lines), file_name="wandb_export.csv").parser is MetricsFileParser
    summary, steps = feed(lines, chunk=3)
    assert steps["loss"].to_list() == pytest.approx([2.5, 2.4])
    assert any("only the first (a)" in w for w in summary.warnings)


def test_a_history_without_training_rows_is_refused() -> None:
    lines = [row(_step=0, _runtime=1.0, _timestamp=1.0, episodic_reward=180.0)]
    with pytest.raises(ParseError, match="no training rows"):
        feed(lines)
