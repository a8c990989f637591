"""Quantiles by counting passes over a LazyFrame equal Polars' in-memory quantile, to the last bit."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs

from perfledger.calc import orderstats

VALUES = hs.one_of(
    hs.floats(allow_nan=True, allow_infinity=True),
    hs.floats(min_value=2.0, max_value=2.2),  # step times: a tight cluster
    hs.sampled_from([0.0, -0.0, 2.5898, 2.5898, 1e-310, 2e-310, 1e308, -1e308]),  # ties, subnormals, extremes
    hs.none(),
)


def in_memory(values: list[float | None], q: float) -> float | None:
    series = pl.Series(values, dtype=pl.Float64).drop_nulls().drop_nans()
    return series.quantile(q, interpolation="linear") if series.len() else None


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@pytest.fixture(params=[(4096, 65_536), (4, 3)], ids=["defaults", "tiny buckets: many passes"])
def passes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    buckets, hold = request.param
    monkeypatch.setattr(orderstats, "BUCKETS", buckets)
    monkeypatch.setattr(orderstats, "HOLD", hold)


# The fixture only sets constants, the same for every example.
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hs.lists(VALUES, max_size=40), hs.sampled_from([0.0, 0.5, 0.99, 1.0, 0.3]))
@example([math.inf, math.inf], 0.5)
def test_quantile_by_passes_is_polars_quantile(passes: None, values: list[float | None], q: float) -> None:
    frame = pl.LazyFrame({"t": values}, schema={"t": pl.Float64})
    assert same(orderstats.quantile(frame, pl.col("t"), q), in_memory(values, q))


def test_quantiles_of_a_filtered_million_values_are_polars_quantiles(passes: None) -> None:
    n = 1_000_000
    frame = pl.LazyFrame({"i": pl.int_range(n, eager=True)}).with_columns(
        t=(pl.col("i") * 7919 % 10007).cast(pl.Float64) / 1000 + 2.0)
    where = pl.col("i") >= n // 10
    expected = frame.filter(where).collect()["t"]
    for q in (0.5, 0.99):
        assert orderstats.quantile(frame, pl.col("t"), q, where) == expected.quantile(q, interpolation="linear")


def test_no_value_left_has_no_quantile() -> None:
    frame = pl.LazyFrame({"t": [None, float("nan")]}, schema={"t": pl.Float64})
    assert orderstats.quantile(frame, pl.col("t"), 0.5) is None
