"""Steps reach the store and the summary in batches of whole frames, in order, and the summary reads them back in
step order (sorted on disk when they came out of order) for its streaming passes."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as hs
from polars.testing import assert_frame_equal

from ingest import streams
from ingest.spool import StepSpool
from perfledger.calc.steady import steady_state, steady_state_of_ordered
from perfledger.records import STEP_SCHEMA
from tests.calc.test_steady_in_passes import assert_same


def _frames(sizes: list[int]) -> list[pl.DataFrame]:
    out, start = [], 0
    for size in sizes:
        out.append(pl.DataFrame({"step": pl.int_range(start, start + size, eager=True), "tokens": [1.0] * size},
                                schema={"step": pl.Int64, "tokens": pl.Float64}))
        start += size
    return out


@settings(deadline=None)
@given(hs.lists(hs.integers(0, 30), max_size=20), hs.integers(1, 50))
def test_batches_hold_every_row_once_in_order_and_only_the_last_is_short(sizes: list[int], min_rows: int) -> None:
    frames = _frames(sizes)
    batches = list(streams.coalesced(iter(frames), min_rows))
    assert all(b.height for b in batches)
    assert all(b.height >= min_rows for b in batches[:-1])
    expected = pl.concat(frames) if frames else pl.DataFrame()
    if batches:
        assert_frame_equal(pl.concat(batches), expected)
    else:
        assert expected.height == 0


def _with_summary_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Every step column, as a parser emits them; a step time of 1 s where the frame has none."""
    timed = frame if "step_time_s" in frame.columns else frame.with_columns(step_time_s=pl.lit(1.0))
    return timed.with_columns(pl.lit(None, dtype).alias(c) for c, dtype in STEP_SCHEMA.items()
                              if c not in timed.columns).select(list(STEP_SCHEMA))


def test_steps_out_of_order_are_read_back_sorted_by_step_with_repeats_in_log_order() -> None:
    spool = StepSpool()
    try:
        for frame in _frames([3, 4]):
            spool.add(_with_summary_columns(frame))
        late = pl.DataFrame({"step": [2, 0, 2], "tokens": [7.0, 8.0, 9.0]})  # below the last step, and repeated
        spool.add(_with_summary_columns(late))
        assert not spool.in_step_order
        steps = spool.for_summary().collect()
        assert steps["step"].to_list() == [0, 0, 1, 2, 2, 2, 3, 4, 5, 6]
        assert steps.filter(pl.col("step") == 2)["tokens"].to_list() == [1.0, 7.0, 9.0]
        assert steps.filter(pl.col("step") == 0)["tokens"].to_list() == [1.0, 8.0]
    finally:
        spool.close()


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.lists(hs.tuples(hs.integers(0, 40), hs.floats(0.5, 0.6)), min_size=1, max_size=15),
                min_size=1, max_size=6))
def test_the_summary_of_steps_in_any_order_is_the_in_memory_steady_state(
        batches: list[list[tuple[int, float]]]) -> None:
    frames = [pl.DataFrame(rows, schema={"step": pl.Int64, "step_time_s": pl.Float64}, orient="row")
              .with_columns(tokens=pl.lit(4096.0)) for rows in batches]
    spool = StepSpool()
    try:
        for frame in frames:
            spool.add(_with_summary_columns(frame))
        passes = steady_state_of_ordered(spool.for_summary())
    finally:
        spool.close()
    assert_same(passes, steady_state(pl.concat(frames)))
