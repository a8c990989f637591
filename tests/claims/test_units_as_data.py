"""Units as data: what the unit grammar cannot derive lives in data/units.csv, a user extends it, a bad row is
refused with its line (an unknown unit is kept as printed and queued: tests/claims/test_resolve_queue.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfledger.errors import DataFileError
from perfledger.vocabulary import Metric, read_metric, read_units, unit_factor


@pytest.mark.parametrize(("metric", "unit", "factor"), [
    (Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOP/sec/chip", 1.0),  # MaxText config READMEs
    (Metric.MODEL_TFLOPS_PER_DEVICE, "TF per GPU", 1.0),
    (Metric.TOKENS_PER_S_PER_DEVICE, "WPS", 1.0),  # torchtitan docs/performance.md
    (Metric.STEP_TIME_S, "ms/step", 0.001),
    (Metric.TIME_TO_TRAIN_S, "hours", 3600.0),
])
def test_publisher_unit_spellings_are_read_from_the_units_file(metric: Metric, unit: str, factor: float) -> None:
    assert unit_factor(metric, unit) == factor


def test_a_column_named_by_its_unit_names_its_metric() -> None:
    assert read_metric("TFLOP/sec/chip") is Metric.MODEL_TFLOPS_PER_DEVICE
    assert read_metric("WPS") is Metric.TOKENS_PER_S_PER_DEVICE
    assert read_metric("%") is None  # MFU, HFU or efficiency: ambiguous, so no metric


def test_a_bad_units_row_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "units.csv"
    path.write_text("metric,spelling,factor\nmfu,%,0.01\nmfu,furlongs,-2\n")
    with pytest.raises(DataFileError, match=r"units.csv:3: factor '-2'"):
        read_units(path)
    path.write_text("metric,spelling,factor\nspeed,m/s,1\n")
    with pytest.raises(DataFileError, match=r"units.csv:2: expected metric,spelling,factor"):
        read_units(path)
