"""Units and precisions by grammar (perfledger/quantities.py): every spelling publishers print reads from its parts,
the parts are data a user extends, and data/units.csv holds only what the grammar cannot derive."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from perfledger import quantities
from perfledger.errors import DataFileError
from perfledger.quantities import parse_unit, read_words, unit_factor_of
from perfledger.vocabulary import UNITS_FILE, Metric, Precision, metric_of_unit, read_precision, unit_factor

M = Metric


@pytest.mark.parametrize(("metric", "unit", "factor"), [
    (M.MODEL_TFLOPS_PER_DEVICE, "TFLOPs/sec/chip", 1.0),  # tpu-recipes Ironwood
    (M.MODEL_TFLOPS_PER_DEVICE, "Per GPU TF", 1.0),  # Megatron MoE Model Zoo
    (M.MODEL_TFLOPS_PER_DEVICE, "PFLOP/s per node (8 GPUs)", 125.0),
    (M.MODEL_TFLOPS_PER_DEVICE, "TFLOP/s per card", 1.0),
    (M.TOKENS_PER_S_PER_DEVICE, "tokens/sec/GPU", 1.0),
    (M.TOKENS_PER_S_PER_DEVICE, "Tok/s/device", 1.0),
    (M.TOKENS_PER_S_PER_DEVICE, "Tokens / sec / GPU", 1.0),  # NeMo RL
    (M.TOKENS_PER_S_PER_DEVICE, "tokens per second per 8-GPU node", 0.125),
    (M.TOKENS_PER_S_PER_DEVICE, "ktokens/hour/GCD", 1000 / 3600),
    (M.TOKENS_PER_S_PER_DEVICE, "tps/accelerator", 1.0),
    (M.TOKENS_PER_S, "K tok/s", 1000.0),
    (M.SAMPLES_PER_S, "sequences/sec", 1.0),
    (M.STEP_TIME_S, "ms/step", 0.001),
    (M.STEP_TIME_S, "seconds per iteration", 1.0),
    (M.TIME_TO_TRAIN_S, "days", 86400.0),
    (M.AGGREGATE_PFLOPS, "EFLOP/s", 1000.0),
])
def test_a_unit_reads_from_its_parts(metric: Metric, unit: str, factor: float) -> None:
    assert unit_factor(metric, unit) == pytest.approx(factor)


@pytest.mark.parametrize(("metric", "unit"), [
    (M.MODEL_TFLOPS_PER_DEVICE, "PFLOP/s per node"),  # a node with no device count printed: not per device
    (M.TOKENS_PER_S, "tokens/s/GPU"),  # a per-device unit is not a total
    (M.STEP_TIME_S, "tokens/s"),
    (M.TIME_TO_TRAIN_S, "s/step"),
    (M.STEP_TIME_S, "fortnights"),
])
def test_a_unit_that_cannot_be_the_metrics_is_not_read(metric: Metric, unit: str) -> None:
    assert unit_factor(metric, unit) is None


def test_the_grammar_reads_a_logged_key_unit_too() -> None:
    reading = parse_unit("tokens/s/GPU")
    assert reading is not None
    assert (reading.quantity, reading.scale, reading.per_device, reading.per_time_s) == ("token", 1.0, True, 1.0)
    assert metric_of_unit("TFLOPs/sec/chip") is M.MODEL_TFLOPS_PER_DEVICE
    assert metric_of_unit("Tokens/sec/chip") is M.TOKENS_PER_S_PER_DEVICE and metric_of_unit("s") is None


@pytest.mark.parametrize(("printed", "precision", "mixed"), [
    ("Training BF16, Generation BF16", Precision.BF16, True),  # NeMo RL
    ("Generation FP8, Training FP8", Precision.FP8, True),
    ("Generation FP8, Training BF16", Precision.BF16, True),  # MFU is the training's
    ("fp8_full", Precision.FP8, False),  # tpu-recipes
    ("MXFP8", Precision.FP8, False),
    ("NVFP4", Precision.FP4, False),
    ("BF16 + Float8 linears", Precision.FP8, True),
    ("bf16 (fp32 master weights)", Precision.BF16, True),
])
def test_a_precision_reads_from_its_formats_and_roles(printed: str, precision: Precision, mixed: bool) -> None:
    reading = read_precision(printed)
    assert reading is not None and reading.precision is precision and bool(reading.meaning) is mixed


def test_a_precision_that_states_only_the_generation_is_not_read_as_the_trainings() -> None:
    assert read_precision("Generation FP8") is None and read_precision("INT4") is None


def test_a_device_noun_a_user_adds_reads_in_every_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    words = tmp_path / "quantity_words.csv"
    words.write_text(quantities.WORDS_FILE.read_text() + "device,wafer,,1\n")
    assert parse_unit("TFLOPs per wafer") is None
    monkeypatch.setattr(quantities, "WORDS_FILE", words)
    quantities.words.cache_clear()
    try:
        assert unit_factor_of(M.MODEL_TFLOPS_PER_DEVICE, "TFLOPs per wafer") == 1.0
    finally:
        monkeypatch.undo()
        quantities.words.cache_clear()


def test_a_bad_words_row_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "quantity_words.csv"
    path.write_text("kind,word,means,factor\nprefix,k,,1e3\ntime,fortnight,,-1\n")
    with pytest.raises(DataFileError, match=r"quantity_words.csv:3: factor '-1'"):
        read_words(path)
    path.write_text("kind,word,means,factor\nformat,int4,int4,\n")
    with pytest.raises(DataFileError, match=r"quantity_words.csv:2: format 'int4' is not a precision"):
        read_words(path)


def test_the_units_file_holds_only_what_the_grammar_cannot_derive() -> None:
    with UNITS_FILE.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r["metric"].startswith("#")]
    assert 0 < len(rows) <= 25
    for row in rows:
        assert unit_factor_of(Metric(row["metric"]), row["spelling"]) != pytest.approx(float(row["factor"]))
