"""An RLHF step's parts over the steady window: medians, shares of the time spent, samples/s."""

from __future__ import annotations

import polars as pl
import pytest

from perfledger.calc.phases import phase_figures
from perfledger.records import steps_frame


def _steps() -> pl.LazyFrame:
    rows = [{"step": 0, "step_time_s": 9.0, "generation_s": 6.0, "training_s": 3.0, "samples": 8.0}]
    rows += [{"step": s, "step_time_s": 4.0, "generation_s": 3.0, "training_s": 0.5, "samples": 8.0}
             for s in range(1, 5)]
    rows.append({"step": 5, "step_time_s": 8.0, "generation_s": 5.0, "training_s": None, "samples": 8.0})
    return steps_frame(rows).lazy()


def test_shares_are_of_the_time_spent_in_the_window_and_skip_steps_without_the_part() -> None:
    figures = phase_figures(_steps(), 1, 5)
    assert figures["generation_share"] == pytest.approx((4 * 3.0 + 5.0) / (4 * 4.0 + 8.0))
    assert figures["training_share"] == pytest.approx(0.5 / 4.0)  # step 5 prints no training part
    assert figures["generation_s_median"] == 3.0 and figures["training_s_median"] == 0.5
    assert figures["samples_per_s"] == pytest.approx(5 * 8.0 / 24.0)


def test_steps_without_phases_give_nothing() -> None:
    plain = steps_frame([{"step": s, "step_time_s": 1.0, "samples": 8.0} for s in range(5)]).lazy()
    assert phase_figures(plain, 0, 4) == {}
    assert phase_figures(_steps(), None, None) == {}
