"""Per-step figures: each step's tokens/s per device, model TFLOP/s per device and MFU, as the summary computes
them over the window; a figure whose input the run lacks stays empty."""

from __future__ import annotations

import polars as pl
import pytest

from perfledger.calc import metrics
from perfledger.calc.steps import STEP_FIGURES, peak_of, step_figures

STEPS = pl.DataFrame({"step": [1, 2, 3], "tokens": [4096, None, 4096], "step_time_s": [2.0, 1.0, 0.5]})


def test_each_step_gets_tokens_per_device_tflops_and_mfu_from_its_own_time() -> None:
    out = step_figures(STEPS, 4, 1e12, 1000.0)
    assert out["tokens_seen"].to_list() == [4096.0, 4096.0, 8192.0]
    assert out["tokens_per_s_per_device"].to_list() == [512.0, None, 2048.0]
    assert out["model_tflops_per_device"].to_list() == [512.0, None, 2048.0]
    assert out["mfu"].to_list() == [0.512, None, 2.048]


def test_the_step_figures_agree_with_the_scalar_formulas() -> None:
    out = step_figures(STEPS, 4, 444.491e9, 989.0)
    tps = 4096 / 2.0 / 4
    assert out["model_tflops_per_device"][0] == pytest.approx(metrics.model_tflops(tps, 444.491e9))
    assert out["mfu"][0] == pytest.approx(metrics.model_tflops(tps, 444.491e9) / 989.0)


@pytest.mark.parametrize(("devices", "flops", "peak", "empty"), [
    (None, 1e12, 1000.0, {"tokens_per_s_per_device", "model_tflops_per_device", "mfu"}),
    (4, None, 1000.0, {"model_tflops_per_device", "mfu"}),
    (4, 1e12, None, {"mfu"}),
])
def test_a_figure_whose_input_is_missing_stays_empty(devices: int | None, flops: float | None,
                                                     peak: float | None, empty: set[str]) -> None:
    out = step_figures(STEPS, devices, flops, peak)
    assert {c for c in STEP_FIGURES if out[c].null_count() == out.height} == empty
    assert all(out[c].dtype == pl.Float64 for c in STEP_FIGURES)


def test_the_peak_is_the_stored_tflops_over_the_stored_mfu_and_none_without_both() -> None:
    assert peak_of(500.0, 0.5) == 1000.0
    assert peak_of(None, 0.5) is None and peak_of(500.0, None) is None and peak_of(500.0, 0.0) is None
