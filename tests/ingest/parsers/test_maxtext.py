"""MaxText stdout: detected by its step line, per-step figures as printed, a steady state through the pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.detect import detect_file, parse_file
from ingest.parsers.maxtext import MaxtextParser
from ingest.pipeline import prepare

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "maxtext_tpu_v5p8_deepseek2_16b_docs_excerpt.log"


def test_maxtext_log_is_detected_as_maxtext() -> None:
    assert detect_file(LOG) is MaxtextParser


def test_maxtext_steps_keep_the_printed_seconds_tflops_and_tokens_per_device() -> None:
    summary, steps = parse_file(LOG)
    assert steps.height == 10
    step9 = steps.filter(steps["step"] == 9).row(0, named=True)
    assert step9["step_time_s"] == pytest.approx(5.667)
    assert step9["reported_tflops_per_device"] == pytest.approx(134.924)
    assert step9["reported_tokens_per_s_per_device"] == pytest.approx(8672.758)
    assert step9["loss"] == pytest.approx(10.374)
    assert step9["tokens"] == pytest.approx(8672.758 * 5.667 * 4)  # ~ 24 x 2048 x 4 devices
    assert summary.config.n_devices == 4
    assert summary.config.seq_len == 2048
    assert summary.config.micro_batch == 24


def test_maxtext_log_prepares_with_a_steady_step_time() -> None:
    with prepare(LOG.read_bytes(), LOG.name) as run:
        assert run.format.value == "maxtext"
        assert run.summary["step_time_s_median"] == pytest.approx(5.668, rel=1e-3)
