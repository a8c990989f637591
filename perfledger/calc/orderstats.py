"""Exact quantiles of a column too long to hold: counting passes over a LazyFrame, in bounded memory.

Each pass is one streaming aggregation: it counts the candidate values per bucket of their range
(BUCKETS equal buckets between their min and max), keeps the bucket holding the wanted rank and drops the
rest. A bucket spans at most 1/BUCKETS of the range before it, so a few passes leave at most HOLD values
(or only equal ones), which are sorted in memory. Bucketing uses the same monotone float expression in the
count and in the filter, so a value's bucket is the same in both and the ranks stay exact.

quantile() interpolates as Polars' quantile(q, interpolation="linear") does, to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

BUCKETS = 4096
HOLD = 262_144  # values sorted in memory (2 MB): most quantiles of a 2.5M-step run then take 4 passes
TINY = 1e-290
_X = "x"


def quantile(frame: pl.LazyFrame, value: pl.Expr, q: float, where: pl.Expr | None = None) -> float | None:
    """The q-quantile of value over the rows where `where` holds, nulls and NaNs left out (None if none is left).

    index = q * (n - 1); quantile = v[floor] + (index - floor) * (v[ceil] - v[floor])   (v ascending)
    """
    return quantiles(frame, value, [q], where)[0]


def quantiles(frame: pl.LazyFrame, value: pl.Expr, qs: Sequence[float],
              where: pl.Expr | None = None) -> list[float | None]:
    """quantile() for each q in qs, sharing the passes."""
    return counted_quantiles(frame, value, qs, where)[1]


def counted_quantiles(frame: pl.LazyFrame, value: pl.Expr, qs: Sequence[float],
                      where: pl.Expr | None = None) -> tuple[int, list[float | None]]:
    """How many values quantiles() reads, and its quantiles, in the same passes."""
    values = candidates(frame, value, where)
    stats = _stats(values)
    n = stats[0]
    if n == 0:
        return 0, [None] * len(qs)
    indexes = [(n - 1) * q for q in qs]
    ranks = sorted({k for index in indexes for k in (int(index), math.ceil(index))})
    found: dict[int, float] = {}
    _select(values, pl.lit(True), ranks, 0, found, stats)
    return n, [_interpolated(index, found[int(index)], found[math.ceil(index)]) for index in indexes]


def _interpolated(index: float, below: float, above: float) -> float:
    if below == above:  # as Polars: an infinity between equal infinities is that infinity, not NaN
        return below
    return (index - int(index)) * (above - below) + below


def candidates(frame: pl.LazyFrame, value: pl.Expr, where: pl.Expr | None = None) -> pl.LazyFrame:
    """One column "x": value where `where` holds, without nulls and NaNs (what Polars' quantile reads)."""
    x = value.cast(pl.Float64).alias(_X)
    rows = frame if where is None else frame.filter(where)
    return rows.select(x).filter(pl.col(_X).is_not_null() & ~pl.col(_X).is_nan())


def count(frame: pl.LazyFrame) -> int:
    return int(frame.select(pl.len()).collect(engine="streaming").item())


def _stats(values: pl.LazyFrame) -> tuple[int, float | None, float | None]:
    x = pl.col(_X)
    n, lo, hi = values.select(pl.len(), x.min().alias("lo"), x.max().alias("hi")).collect(engine="streaming").row(0)
    return int(n), lo, hi


def _select(values: pl.LazyFrame, inside: pl.Expr, ranks: list[int], below: int, out: dict[int, float],
            stats: tuple[int, float | None, float | None] | None = None) -> None:
    """Ranks (over all values) of values where `inside` holds; `below` values lie under every one of them."""
    x = pl.col(_X)
    kept = values.filter(inside)
    n, lo, hi = stats or _stats(kept)
    assert lo is not None and hi is not None, "ranks of no values"
    if lo == hi:
        out.update(dict.fromkeys(ranks, float(lo)))
        return
    if not (math.isfinite(lo) and math.isfinite(hi)):
        _split_infinities(values, inside, ranks, below, n, out)
        return
    # A range under TINY would bucket subnormals, which Polars' vectorized arithmetic may read as zero.
    if n <= HOLD or hi * 0.5 - lo * 0.5 < TINY:
        _hold(kept, ranks, below, out)
        return
    bucket = _bucket(x, lo, hi)
    counts = (kept.group_by(bucket.alias("b")).agg(pl.len().alias("n"), x.min().alias("lo"), x.max().alias("hi"))
              .collect(engine="streaming").sort("b"))
    if counts.height < 2:  # no narrower bucket to go on with (cannot happen with exact arithmetic)
        _hold(kept, ranks, below, out)
        return
    start = below
    for b, size, b_lo, b_hi in counts.iter_rows():
        wanted = [k for k in ranks if start <= k < start + size]
        if wanted:  # the bucket's count, min and max came with it: no pass to find them again
            _select(values, inside & (bucket == b), wanted, start, out, (size, b_lo, b_hi))
        start += size


def _hold(kept: pl.LazyFrame, ranks: list[int], below: int, out: dict[int, float]) -> None:
    held = kept.collect()[_X].sort()
    out.update({k: float(held[k - below]) for k in ranks})


def _split_infinities(values: pl.LazyFrame, inside: pl.Expr, ranks: list[int], below: int, n: int,
                      out: dict[int, float]) -> None:
    """-inf sorts first and inf last: ranks there are answered by counting; the finite values go on."""
    x = pl.col(_X)
    neg, pos = values.filter(inside).select((x == -math.inf).sum().alias("neg"), (x == math.inf).sum().alias("pos")) \
        .collect(engine="streaming").row(0)
    finite = []
    for k in ranks:
        if k - below < neg:
            out[k] = -math.inf
        elif k - below >= n - pos:
            out[k] = math.inf
        else:
            finite.append(k)
    if finite:
        _select(values, inside & x.is_finite(), finite, below + neg, out)


def _bucket(x: pl.Expr, lo: float, hi: float) -> pl.Expr:
    """0..BUCKETS-1, monotone in x: each step is an IEEE operation with a constant, and those never reorder.

    Halved first so that hi - lo cannot overflow; lo lands in bucket 0 and hi in the last.
    """
    span = hi * 0.5 - lo * 0.5
    return ((x * 0.5 - lo * 0.5) / span * BUCKETS).floor().clip(0, BUCKETS - 1).cast(pl.Int32)
