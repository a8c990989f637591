"""A run against its configuration's recent history (or against one named run): which steady-state figures moved,
by how much, against which runs. `python -m perfledger check` prints it; the History page flags by the same rule
(perfledger.calc.changepoints.worse_than_before)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger.calc.changepoints import worse_by
from perfledger.errors import InvalidInput
from perfledger.store.history import runs_to_check
from perfledger.views.history import DEFAULT_THRESHOLD_PCT, DEFAULT_WINDOW, HIGHER_IS_BETTER, METRICS, series_rows

HISTORY = "history"


@dataclass(frozen=True, slots=True)
class FigureCheck:
    metric: str
    value: float
    baseline: float  # the median of the baseline runs' figures (the one run's, against a run)
    worse: float  # fraction of the baseline; negative: better
    regressed: bool
    against: tuple[int, ...]  # the run ids the baseline came from

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "baseline": self.baseline,
                "worse_pct": round(self.worse * 100, 3), "regressed": self.regressed, "against": list(self.against)}


@dataclass(frozen=True, slots=True)
class RunCheck:
    run_id: int
    configuration: str
    figures: tuple[FigureCheck, ...]
    note: str = ""  # why nothing was compared, when nothing was

    @property
    def regressed(self) -> bool:
        return any(f.regressed for f in self.figures)

    def as_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "configuration": self.configuration, "regressed": self.regressed,
                "figures": [f.as_json() for f in self.figures], "note": self.note}


@dataclass(frozen=True, slots=True)
class CheckReport:
    target: str
    against: str
    threshold_pct: float
    window: int
    runs: tuple[RunCheck, ...]

    @property
    def regressed(self) -> bool:
        return any(r.regressed for r in self.runs)

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "against": self.against, "threshold_pct": self.threshold_pct,
                "window": self.window, "verdict": "regression" if self.regressed else "pass",
                "runs": [r.as_json() for r in self.runs]}


def check(engine: Engine, target: str, *, against: str = HISTORY, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
          window: int = DEFAULT_WINDOW) -> CheckReport:
    """Each run `target` names, judged figure by figure against the median of the `window` runs of its
    configuration dated before it (or against the run `against`): regressed when worse by more than the threshold."""
    if not 0 <= threshold_pct <= 100 or window < 1:
        raise InvalidInput(f"the threshold is a percentage from 0 to 100 and the window at least 1 run; "
                           f"got {threshold_pct:g} and {window}")
    run_ids = runs_to_check(engine, target)
    rows = series_rows(engine)
    baseline_run = None if against == HISTORY else runs_to_check(engine, against)[0]
    if len(run_ids) == 1:
        runs: tuple[RunCheck, ...] = (_check_run(rows, run_ids[0], baseline_run, threshold_pct / 100, window),)
    else:  # a campaign: a run with no steady-state figure (a failed attempt) is reported, not fatal
        runs = tuple(_check_run_or_note(rows, run_id, baseline_run, threshold_pct / 100, window) for run_id in run_ids)
    return CheckReport(target, against, threshold_pct, window, runs)


def _check_run(rows: pl.DataFrame, run_id: int, baseline_run: int | None, threshold: float,
               window: int) -> RunCheck:
    own = rows.filter(pl.col("run_id") == run_id)
    if own.height == 0:
        raise InvalidInput(f"run {run_id} has no steady-state figure to check ({', '.join(METRICS)})")
    first = own.row(0, named=True)
    if baseline_run is not None:
        base = rows.filter(pl.col("run_id") == baseline_run)
    else:
        base = _runs_before(rows, first, window)
    figures = tuple(f for metric in METRICS if (f := _figure(own, base, metric, threshold)) is not None)
    note = "" if figures else (f"no run of {first['configuration']} dated before this one: nothing to compare"
                               if baseline_run is None else f"run {baseline_run} has none of this run's figures")
    return RunCheck(run_id, first["configuration"], figures, note)


def _check_run_or_note(rows: pl.DataFrame, run_id: int, baseline_run: int | None, threshold: float,
                       window: int) -> RunCheck:
    try:
        return _check_run(rows, run_id, baseline_run, threshold, window)
    except InvalidInput as refused:
        return RunCheck(run_id, "", (), str(refused))


def _runs_before(rows: pl.DataFrame, run: dict[str, Any], window: int) -> pl.DataFrame:
    """The rows of the `window` runs of `run`'s configuration dated before it (by date, then run id)."""
    same = rows.filter(pl.col("configuration") == run["configuration"])
    before = same.filter((pl.col("date") < run["date"])
                         | ((pl.col("date") == run["date"]) & (pl.col("run_id") < run["run_id"])))
    recent = before.select("run_id", "date").unique().sort(["date", "run_id"]).tail(window)["run_id"]
    return before.filter(pl.col("run_id").is_in(recent.implode()))


def _figure(own: pl.DataFrame, base: pl.DataFrame, metric: str, threshold: float) -> FigureCheck | None:
    mine = own.filter(pl.col("metric") == metric)["value"].drop_nulls()
    theirs = base.filter(pl.col("metric") == metric).drop_nulls("value")
    if mine.len() == 0 or theirs.height == 0:
        return None
    value, baseline = float(mine[0]), float(median(theirs["value"].to_list()))
    worse = worse_by(value, baseline, higher_is_better=HIGHER_IS_BETTER[metric])
    return FigureCheck(metric, value, baseline, worse, worse > threshold, tuple(sorted(theirs["run_id"].to_list())))
