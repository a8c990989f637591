"""Launches in one log: a smoke test before the main run, a restart, a resumed job.

A launch is a stretch of steps whose numbering rises; a parser that sees the numbering start again (at or below
the highest step so far) numbers the next launch, and every launch's steps are stored (column `launch`, null for
a log of one launch). A launch that resumes above the highest step so far continues the same launch (the
launches joined). The run is summarised over its longest launch: the most logged steps, then the most wall time,
then the later launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True, slots=True)
class LaunchSpan:
    launch: int
    first_step: int
    last_step: int
    steps: int  # logged step rows
    wall_time_s: float | None  # sum of logged step time x iterations per logged row

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def longest_launch(rows: Mapping[int, int], wall_s: Mapping[int, float] | None = None) -> int:
    """The launch summarised by default: most logged steps, then most wall time, then the later one.

    >>> longest_launch({1: 2, 2: 344})
    2
    >>> longest_launch({1: 5, 2: 5}, {1: 9.0, 2: 3.0})
    1
    """
    if not rows:
        raise ValueError("no launches")
    times = wall_s or {}
    return max(rows, key=lambda k: (rows[k], times.get(k) or 0.0, k))


def launch_table(steps: pl.LazyFrame) -> list[LaunchSpan]:
    """One LaunchSpan per launch of `steps` (columns step, step_time_s, launch; launch null = launch 1), in step
    order within each launch. Wall time counts each logged row's time once per iteration it stands for (the
    gap to the previous logged step in the launch; the launch's first row counts as the median gap)."""
    if "launch" not in steps.collect_schema().names():
        steps = steps.with_columns(pl.lit(None, dtype=pl.Int64).alias("launch"))
    launch = pl.col("launch").fill_null(1)
    gap = pl.col("step").diff().over(launch)
    frame = (steps.select(launch.alias("launch"), "step", pl.col("step_time_s").cast(pl.Float64))
             .with_columns(gap.alias("gap"))
             .with_columns(pl.col("gap").fill_null(pl.col("gap").median().over("launch")).fill_null(1))
             .group_by("launch", maintain_order=True)
             .agg(pl.col("step").first().alias("first_step"), pl.col("step").last().alias("last_step"),
                  pl.len().alias("steps"),
                  (pl.col("step_time_s") * pl.col("gap")).filter(pl.col("step_time_s").is_finite()).sum()
                  .alias("wall_time_s"))
             .sort("launch").collect())
    return [LaunchSpan(launch=int(r["launch"]), first_step=int(r["first_step"]), last_step=int(r["last_step"]),
                       steps=int(r["steps"]), wall_time_s=float(r["wall_time_s"]) if r["wall_time_s"] else None)
            for r in frame.iter_rows(named=True)]


def chosen_launch(spans: list[LaunchSpan]) -> LaunchSpan:
    """The LaunchSpan longest_launch() picks."""
    by_number = {s.launch: s for s in spans}
    pick = longest_launch({s.launch: s.steps for s in spans}, {s.launch: s.wall_time_s or 0.0 for s in spans})
    return by_number[pick]


SEVERAL_RUNS = "several runs in one file:"  # how launches_note() starts (a summary's own warning)


def launches_note(spans: list[LaunchSpan], chosen: int, lines: Mapping[str, list[int]]) -> str:
    """Which launch a file of several is summarised over, and every launch beside it (its lines where `lines`,
    launch number as text -> [first, last], gives them): the figures of one launch, never of their steps pooled.

    >>> launches_note([LaunchSpan(1, 1, 10, 10, 9.0), LaunchSpan(2, 1, 30, 30, 20.0)], 2, {"1": [3, 40], "2": [50, 90]})
    'several runs in one file: 2 launches (the step numbering goes back to the start): launch 1, lines 3-40, steps 1-10 (10 rows); launch 2, lines 50-90, steps 1-30 (30 rows); the figures are launch 2 (lines 50-90) alone, the longest (most logged steps, then most wall time), never the launches pooled'
    """
    def where(span: LaunchSpan) -> str:
        first_last = lines.get(str(span.launch))
        return f"lines {first_last[0]}-{first_last[1]}" if first_last else f"steps {span.first_step}-{span.last_step}"

    every = "; ".join(f"launch {s.launch}, " + (f"{where(s)}, " if str(s.launch) in lines else "")
                      + f"steps {s.first_step}-{s.last_step} ({s.steps:,} rows)" for s in spans)
    pick = next(s for s in spans if s.launch == chosen)
    return (f"{SEVERAL_RUNS} {len(spans)} launches (the step numbering goes back to the start): {every}; the figures "
            f"are launch {chosen} ({where(pick)}) alone, the longest (most logged steps, then most wall time), never "
            "the launches pooled")
