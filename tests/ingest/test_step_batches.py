"""Steps reach the store and the summary in batches of whole frames, in order, and the summary knows whether
they came in step order (it reads them in streaming passes only then)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as hs
from polars.testing import assert_frame_equal

from ingest import pipeline


def _frames(sizes: list[int]) -> list[pl.DataFrame]:
    out, start = [], 0
    for size in sizes:
        out.append(pl.DataFrame({"step": pl.int_range(start, start + size, eager=True), "tokens": [1.0] * size},
                                schema={"step": pl.Int64, "tokens": pl.Float64}))
        start += size
    return out


@settings(max_examples=100, deadline=None)
@given(hs.lists(hs.integers(0, 30), max_size=20), hs.integers(1, 50))
def test_batches_hold_every_row_once_in_order_and_only_the_last_is_short(sizes: list[int], min_rows: int) -> None:
    frames = _frames(sizes)
    batches = list(pipeline._coalesced(iter(frames), min_rows))
    assert all(b.height for b in batches)
    assert all(b.height >= min_rows for b in batches[:-1])
    expected = pl.concat(frames) if frames else pl.DataFrame()
    if batches:
        assert_frame_equal(pl.concat(batches), expected)
    else:
        assert expected.height == 0


def _with_summary_columns(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(step_time_s=pl.lit(1.0), reported_tflops_per_device=pl.lit(None, pl.Float64),
                              reported_mfu=pl.lit(None, pl.Float64),
                              reported_tokens_per_s_per_device=pl.lit(None, pl.Float64))


def test_steps_in_order_are_read_lazily_and_steps_out_of_order_in_memory() -> None:
    spool = pipeline._SummarySpool()
    try:
        for frame in _frames([3, 4]):
            spool.add(_with_summary_columns(frame))
        assert isinstance(spool.read(), pl.LazyFrame)
        spool.add(_with_summary_columns(pl.DataFrame({"step": [2], "tokens": [1.0]})))  # below the last step
        unordered = spool.read()
        assert isinstance(unordered, pl.DataFrame)
        assert unordered["step"].to_list() == [0, 1, 2, 3, 4, 5, 6, 2]
    finally:
        spool.close()
