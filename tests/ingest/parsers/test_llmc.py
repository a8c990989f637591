"""llm.c main.log: no step time, and a warning that throughput cannot be derived from it."""

from __future__ import annotations

import pytest

from ingest.parsers import llmc
from tests.ingest.parsers.helpers import LOGS, parse_with


def test_llmc_main_log_has_no_step_time_and_says_throughput_cannot_be_derived() -> None:
    summary, steps = parse_with(llmc.PARSER, LOGS / "siddanthemani_gpt2_124m_8xa100_main.log")
    assert steps["step_time_s"].null_count() == steps.height
    assert steps.row(0, named=True)["loss"] == pytest.approx(11.0116)
    assert "throughput cannot be derived" in summary.warnings[0]
    assert summary.meta["last_eval"] == {"step": 19552, "accuracy": 0.3054}
