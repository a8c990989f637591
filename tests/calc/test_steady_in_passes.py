"""steady_state_of_ordered (streaming passes, what ingest uses) gives steady_state's figures for the same steps."""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from perfledger.calc.steady import SteadyRule, SteadyState, steady_state, steady_state_of_ordered
from perfledger.errors import InvalidInput

STEP_TIMES = hs.one_of(hs.floats(min_value=0.5, max_value=0.6), hs.sampled_from([0.55, 0.55, 3.0, 9.0]),
                       hs.sampled_from([0.0, -1.0, float("nan"), float("inf")]), hs.none())
TOKENS = hs.one_of(hs.just(4096.0), hs.floats(min_value=0, max_value=1e7), hs.none(), hs.just(float("nan")))
RULES = hs.sampled_from([SteadyRule(), SteadyRule(warmup_min_steps=0, warmup_fraction=0.0),
                         SteadyRule(first_step=5, last_step=30), SteadyRule(last_step=10), SteadyRule(stall_mads=1.0)])
EXACT = ("first_step", "last_step", "steps_in_window", "warmup_steps", "stalls", "step_time_s_median",
         "step_time_s_p99", "jitter_p99_p50")
SUMMED = ("jitter_cv", "tokens_per_s")  # mean, std and sums: the same up to summation order


def assert_same(passes: SteadyState, in_memory: SteadyState) -> None:
    for name in EXACT:
        assert getattr(passes, name) == getattr(in_memory, name), name
    for name in SUMMED:
        ours, theirs = getattr(passes, name), getattr(in_memory, name)
        assert (ours is None) == (theirs is None), name
        if ours is not None:
            assert math.isclose(ours, theirs, rel_tol=1e-12, abs_tol=1e-15), name  # a CV of 0 may come out 1e-17


@settings(deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), STEP_TIMES, TOKENS), min_size=1, max_size=60), RULES)
def test_passes_give_the_in_memory_steady_state(rows: list[tuple[int, float | None, float | None]],
                                                 rule: SteadyRule) -> None:
    steps, step = [], 0
    for gap, time, tokens in rows:  # in step order, repeats allowed (a gap of 0)
        step += gap
        steps.append((step, time, tokens))
    frame = pl.DataFrame(steps, schema={"step": pl.Int64, "step_time_s": pl.Float64, "tokens": pl.Float64},
                         orient="row")
    assert_same(steady_state_of_ordered(frame.lazy(), rule), steady_state(frame, rule))


def test_a_long_run_split_over_files_gives_the_in_memory_steady_state(tmp_path) -> None:  # type: ignore[no-untyped-def]
    n = 300_000
    frame = pl.DataFrame({"step": pl.int_range(1, n + 1, eager=True)}).with_columns(
        step_time_s=2.5 + (pl.col("step") * 7919 % 1009).cast(pl.Float64) / 1e4
        + pl.when(pl.col("step") % 5000 == 0).then(30.0).otherwise(0.0),  # a checkpoint every 5000 steps
        tokens=pl.lit(327_680.0))
    files = []
    for i, part in enumerate(frame.iter_slices(70_000)):
        files.append(tmp_path / f"{i}.parquet")
        part.write_parquet(files[-1])
    spooled = pl.concat([pl.scan_parquet(f) for f in files])
    passes = steady_state_of_ordered(spooled)
    assert_same(passes, steady_state(frame))
    assert passes.stalls == 54  # 60 checkpoints, 6 of them in the warm-up


def test_no_steps_have_no_steady_state_either_way() -> None:
    empty = pl.DataFrame(schema={"step": pl.Int64, "step_time_s": pl.Float64, "tokens": pl.Float64})
    computes: tuple[Callable[[], object], ...] = (lambda: steady_state(empty),
                                                  lambda: steady_state_of_ordered(empty.lazy()))
    for compute in computes:
        with pytest.raises(InvalidInput):
            compute()
