"""A window too short to be a steady state says so; the warm-up cap keeps a short run's later half."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl

from ingest.pipeline import preview
from perfledger.calc.steady import SteadyRule, not_steady, steady_state, warmup_count

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _steps(times: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"step": range(1, len(times) + 1), "step_time_s": times, "tokens": [1.0] * len(times)})


def test_the_warm_up_is_capped_at_half_the_steps() -> None:
    assert [warmup_count(n, SteadyRule()) for n in (1, 2, 4, 6, 20, 1000)] == [0, 1, 2, 3, 3, 100]
    assert "at most half" in SteadyRule().describe()


def test_a_long_even_run_is_a_steady_state() -> None:
    assert not_steady(steady_state(_steps([1.0] * 30))) == []


def test_fewer_than_five_timed_steps_after_warm_up_are_flagged() -> None:
    assert not_steady(steady_state(_steps([2.0] + [1.0] * 6))) == [
        "only 4 timed steps after warm-up and stalls (fewer than 5)"]


def test_a_window_of_one_step_is_flagged() -> None:
    flags = not_steady(steady_state(_steps([3.0, 1.0])))
    assert "the window is a single step" in flags


def test_a_window_of_only_stalls_is_flagged() -> None:
    s = replace(steady_state(_steps([1.0] * 30)), timed_steps=0, stalls=27)
    assert not_steady(s) == ["every timed step after warm-up is a stall (27)"]


def test_a_real_three_step_log_is_flagged_and_the_rule_is_stored_with_it() -> None:
    log = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"
    out = preview(log.read_bytes(), log.name).as_json()
    assert out["steady_state"]["not_steady"] and any(w.startswith("not a steady state") for w in out["warnings"])
    assert out["steady_state"]["rule"]["min_steady_steps"] == 5
    assert "at most half" in out["steady_state"]["rule_text"]


def test_a_real_long_log_is_not_flagged() -> None:
    log = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
    assert preview(log.read_bytes(), log.name).as_json()["steady_state"]["not_steady"] == []
