"""Where a run's wall time went, from its log's own timeline: goodput.

The wall clock is the span between the first and the last date the log printed, when both are known; else the
logged steps' own time. Each logged step row stands for the iterations since the previous row of its launch (the
launch's first row for the median gap), as perfledger.calc.launches counts a launch's wall time. The parts:

    productive_s  steady steps (the steady rule keeps them)                      sum(step_time_s x iterations)
    warmup_s      warm-up steps: the first steps of each launch, compilation and allocation included
    stalls_s      steps slower than the stall threshold of the steady rule
    restarts_s    steps a later launch logged again (work lost to a restart, or a smoke test run before)
    evaluation_s  evaluation the log marks with its own time
    checkpoint_s  checkpoint saves the log marks with their own time
    outside_steps_s  the rest of the printed span: start-up, gaps between launches, evaluation and saves between
                  steps that carry no time of their own, and the tail after the last step (the log's step lines
                  carry no clock, so these are not told apart)

    wall_s = productive_s + warmup_s + stalls_s + restarts_s + evaluation_s + checkpoint_s + outside_steps_s
    effective tokens per device-hour = tokens trained (launches not redone) / (wall_s / 3600 x devices)
    tokens per dollar = effective tokens per device-hour / usd_per_device_hour
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from perfledger.calc import metrics
from perfledger.calc.steady import SteadyRule, label_steps

PARTS = ("productive_s", "warmup_s", "stalls_s", "restarts_s", "evaluation_s", "checkpoint_s", "outside_steps_s")
PART_LABELS = {"productive_s": "productive steps", "warmup_s": "warm-up and compilation", "stalls_s": "stalls",
               "restarts_s": "restarts (work redone)", "evaluation_s": "evaluation", "checkpoint_s": "checkpoint saves",
               "outside_steps_s": "start-up, gaps and tail"}
DEFAULT_RULE = SteadyRule()
_PHASE_PART = {"steady": "productive_s", "warmup": "warmup_s", "stall": "stalls_s"}


@dataclass(frozen=True, slots=True)
class GoodputPart:
    """One share of the wall clock, in seconds, and what in the log marks it."""

    name: str
    seconds: float
    marked_by: str


@dataclass(frozen=True, slots=True)
class Goodput:
    """A run's wall clock split into parts that add up to it, with the effective throughput over all of it."""

    wall_s: float
    wall_from: str
    parts: tuple[GoodputPart, ...]
    tokens: float | None  # tokens trained in the steps not redone, all devices
    devices: int | None
    usd_per_device_hour: float | None = None

    @property
    def tokens_per_device_hour(self) -> float | None:
        if not self.tokens or not self.devices or self.wall_s <= 0:
            return None
        return self.tokens / (self.wall_s / metrics.SECONDS_PER_HOUR * self.devices)

    @property
    def tokens_per_usd(self) -> float | None:
        per_hour = self.tokens_per_device_hour
        if per_hour is None or not self.usd_per_device_hour:
            return None
        return per_hour / self.usd_per_device_hour

    def seconds(self, name: str) -> float:
        return next(p.seconds for p in self.parts if p.name == name)

    def as_json(self) -> dict[str, Any]:
        return {"wall_s": self.wall_s, **{p.name: p.seconds for p in self.parts}, "wall_from": self.wall_from,
                "marked_by": {p.name: p.marked_by for p in self.parts},
                "productive_share": self.seconds("productive_s") / self.wall_s if self.wall_s > 0 else None,
                "effective_tokens_per_device_hour": self.tokens_per_device_hour,
                "usd_per_device_hour": self.usd_per_device_hour, "tokens_per_usd": self.tokens_per_usd}


def step_phases(steps: pl.DataFrame, rule: SteadyRule = DEFAULT_RULE) -> pl.DataFrame:
    """`steps` (step, step_time_s, tokens, launch) with `phase` (each launch labelled by the steady rule on its own:
    a relaunch warms up again), `iterations` (the iterations a logged row stands for) and `redone` (a later launch
    logged the step again)."""
    frame = steps.with_columns(pl.col("launch").fill_null(1) if "launch" in steps.columns else pl.lit(1).alias("launch"))
    parts = [_labelled(part.sort("step", maintain_order=True), rule)
             for part in frame.partition_by("launch", maintain_order=True)]
    labelled = pl.concat(parts) if parts else frame.with_columns(phase=pl.lit(None, pl.String),
                                                                 iterations=pl.lit(None, pl.Float64))
    firsts = labelled.group_by("launch").agg(pl.col("step").min().alias("_first")).sort("launch")
    later_first = {int(lch): _min_after(firsts, int(lch)) for lch in firsts["launch"].to_list()}
    redone = pl.col("launch").replace_strict(later_first, default=None, return_dtype=pl.Int64)
    return labelled.with_columns((redone.is_not_null() & (pl.col("step") >= redone)).alias("redone"))


def _labelled(launch: pl.DataFrame, rule: SteadyRule) -> pl.DataFrame:
    gap = pl.col("step").diff().cast(pl.Float64)
    return launch.with_columns(label_steps(launch, rule).alias("phase"),
                               gap.fill_null(gap.median()).fill_null(1.0).alias("iterations"))


def _min_after(firsts: pl.DataFrame, launch: int) -> int | None:
    later = firsts.filter(pl.col("launch") > launch)["_first"]
    return int(later.min()) if later.len() else None  # type: ignore[arg-type]


def step_seconds(phased: pl.DataFrame) -> dict[str, float]:
    """Seconds of logged steps per goodput part (productive, warm-up, stalls, restarts)."""
    t = pl.col("step_time_s").cast(pl.Float64)
    timed = phased.filter(t.is_not_null() & t.is_finite() & (t > 0))
    spent = (t * pl.col("iterations")).sum()
    out = {name: 0.0 for name in ("productive_s", "warmup_s", "stalls_s", "restarts_s")}
    out["restarts_s"] = float(timed.filter(pl.col("redone")).select(spent).item() or 0.0)
    for phase, name in _PHASE_PART.items():
        out[name] = float(timed.filter(~pl.col("redone") & (pl.col("phase") == phase)).select(spent).item() or 0.0)
    return out


def tokens_trained(phased: pl.DataFrame) -> float | None:
    """Tokens (all devices) of the logged steps no later launch redid, each row for the iterations it stands for."""
    if "tokens" not in phased.columns:
        return None
    kept = phased.filter(~pl.col("redone") & pl.col("tokens").is_not_null() & pl.col("tokens").is_finite())
    return float(kept.select((pl.col("tokens") * pl.col("iterations")).sum()).item()) if kept.height else None


def goodput(phased: pl.DataFrame, *, printed_span: tuple[datetime, datetime] | None, devices: int | None,
            markers: Mapping[str, float] | None = None, usd_per_device_hour: float | None = None) -> Goodput:
    """The run's wall clock split into PARTS (see the module docstring); `markers` holds the evaluation_s and
    checkpoint_s the log marks (absent: none marked)."""
    logged = step_seconds(phased)
    marked = {name: float((markers or {}).get(name) or 0.0) for name in ("evaluation_s", "checkpoint_s")}
    inside = sum(logged.values()) + sum(marked.values())
    wall, wall_from = _wall(inside, printed_span)
    seconds = logged | marked | {"outside_steps_s": max(wall - inside, 0.0)}
    parts = tuple(GoodputPart(name, seconds[name], _marked_by(name, markers, printed_span is not None)) for name in PARTS)
    return Goodput(wall, wall_from, parts, tokens_trained(phased), devices, usd_per_device_hour)


def _wall(inside: float, span: tuple[datetime, datetime] | None) -> tuple[float, str]:
    if span is None:
        return inside, "the logged steps' own times (the log's first and last printed dates are not stored)"
    printed = (span[1] - span[0]).total_seconds()
    if printed < inside:
        return inside, (f"the logged steps' own times: the log's printed dates span {printed:,.0f} s, less than its "
                        "steps report (a step time averaged over several steps, or a clock in another zone)")
    return printed, f"the log's first and last printed dates ({span[0]:%Y-%m-%d %H:%M:%S} to {span[1]:%H:%M:%S})"


_MARKS = {
    "productive_s": "steady steps: step time x iterations of each logged step the steady rule keeps",
    "warmup_s": "the first logged steps of each launch (the steady rule's warm-up): compilation and allocation",
    "stalls_s": "steps slower than the steady rule's stall threshold",
    "restarts_s": "steps of a launch that a later launch logged again (the step counter restarted)",
}


def _marked_by(name: str, markers: Mapping[str, float] | None, spanned: bool) -> str:
    if name in _MARKS:
        return _MARKS[name]
    if name in ("evaluation_s", "checkpoint_s"):
        what = "evaluation" if name == "evaluation_s" else "checkpoint save"
        if markers and name in markers:
            return f"the log's own {what} timings"
        return f"no {what} timing is kept for this log: any {what} between steps is in outside_steps_s"
    return ("the printed span less every part above: start-up, gaps between launches, the tail after the last step"
            if spanned else "nothing: without printed dates the wall clock is the steps' own time")
