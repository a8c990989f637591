"""Goodput (perfledger.calc.goodput): the wall clock split into parts that add up to it, each named by what in the
log marks it; a relaunch's redone steps counted as lost, and a printed span shorter than the steps never trusted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
from hypothesis import given
from hypothesis import strategies as hs

from perfledger.calc import goodput as g

T0 = datetime(2025, 6, 12, tzinfo=UTC)


def steps(times: list[float], launch: list[int | None] | None = None, step: list[int] | None = None) -> pl.DataFrame:
    n = len(times)
    return pl.DataFrame({"step": step or list(range(1, n + 1)), "step_time_s": times, "tokens": [1000.0] * n,
                         "launch": launch or [None] * n}, schema={"step": pl.Int64, "step_time_s": pl.Float64,
                                                                  "tokens": pl.Float64, "launch": pl.Int64})


def test_warm_up_stalls_and_steady_steps_are_told_apart_and_the_rest_of_the_printed_span_is_outside() -> None:
    frame = steps([30.0, 10.0, 9.0] + [1.0] * 16 + [6.0])  # 20 steps: 3 warm-up, one stall at the end
    flow = g.goodput(g.step_phases(frame), printed_span=(T0, T0 + timedelta(seconds=200)), devices=8)
    assert (flow.seconds("warmup_s"), flow.seconds("stalls_s"), flow.seconds("productive_s")) == (49.0, 6.0, 16.0)
    assert flow.wall_s == 200.0 and flow.seconds("outside_steps_s") == 200.0 - 71.0
    assert flow.tokens == 20_000 and round(flow.tokens_per_device_hour or 0) == round(20_000 / (200 / 3600 * 8))


def test_steps_a_relaunch_logged_again_are_work_lost_to_the_restart() -> None:
    """Launch 1 logs steps 1-10 and dies; launch 2 resumes from step 6: launch 1's steps 6-10 were redone."""
    frame = steps([1.0] * 10 + [1.0] * 10, launch=[1] * 10 + [2] * 10, step=[*range(1, 11), *range(6, 16)])
    phased = g.step_phases(frame)
    assert phased.filter(pl.col("redone"))["step"].to_list() == [6, 7, 8, 9, 10]
    flow = g.goodput(phased, printed_span=None, devices=1)
    assert flow.seconds("restarts_s") == 5.0
    assert flow.seconds("warmup_s") == 6.0  # each launch warms up again: 3 steps each
    assert flow.tokens == 15_000  # the redone steps' tokens are not counted twice


def test_a_printed_span_shorter_than_the_steps_is_not_the_wall_clock() -> None:
    flow = g.goodput(g.step_phases(steps([2.0] * 10)), printed_span=(T0, T0 + timedelta(seconds=5)), devices=1)
    assert flow.wall_s == 20.0 and flow.seconds("outside_steps_s") == 0.0
    assert "span 5 s, less than its steps report" in flow.wall_from


def test_evaluation_and_checkpoints_the_log_times_are_their_own_parts() -> None:
    flow = g.goodput(g.step_phases(steps([1.0] * 10)), printed_span=(T0, T0 + timedelta(seconds=100)), devices=1,
                     markers={"evaluation_s": 12.0, "checkpoint_s": 8.0})
    assert (flow.seconds("evaluation_s"), flow.seconds("checkpoint_s"), flow.seconds("outside_steps_s")) == \
        (12.0, 8.0, 70.0)
    assert flow.as_json()["marked_by"]["evaluation_s"] == "the log's own evaluation timings"
    unmarked = g.goodput(g.step_phases(steps([1.0] * 10)), printed_span=None, devices=1)
    assert "no evaluation timing is kept" in unmarked.as_json()["marked_by"]["evaluation_s"]


def test_a_price_gives_tokens_per_dollar() -> None:
    flow = g.goodput(g.step_phases(steps([1.0] * 10)), printed_span=(T0, T0 + timedelta(seconds=3600)), devices=2,
                     usd_per_device_hour=4.0)
    assert flow.tokens_per_device_hour == 5000.0 and flow.tokens_per_usd == 1250.0


@given(times=hs.lists(hs.floats(0.01, 1e4), min_size=1, max_size=60), extra=hs.floats(0, 1e6))
def test_the_parts_always_add_up_to_the_wall_clock(times: list[float], extra: float) -> None:
    span = (T0, T0 + timedelta(seconds=sum(times) + extra))
    flow = g.goodput(g.step_phases(steps(times)), printed_span=span, devices=1)
    assert abs(sum(p.seconds for p in flow.parts) - flow.wall_s) <= 1e-6 * max(flow.wall_s, 1.0)
    assert [p.name for p in flow.parts] == list(g.PARTS)
