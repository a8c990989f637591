"""A run against its configuration's recent history (or against one named run): which steady-state figures moved,
by how much, against which runs. `python -m perfledger check` prints it; the History page flags by the same rule
(perfledger.calc.changepoints.worse_than_before).

Like for like: a run is judged only against runs of the same model, accelerator, devices, precision and workload
(its History configuration); a named run that differs in any of them is refused with what differs, unless asked
(`mixed`), and then every difference is named beside the result. An MLPerf result is judged on its time to train."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc.changepoints import worse_by
from perfledger.errors import InvalidInput
from perfledger.store.history import runs_to_check
from perfledger.views.history import (
    DEFAULT_THRESHOLD_PCT,
    DEFAULT_WINDOW,
    HIGHER_IS_BETTER,
    JUDGED_ON,
    METRICS,
    series_rows,
)
from perfledger.views.verdict import unlike

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
    differences: tuple[str, ...] = ()  # against a named run of another setup (asked for): what differs

    @property
    def regressed(self) -> bool:
        return any(f.regressed for f in self.figures)

    @property
    def compared(self) -> bool:
        return bool(self.figures)

    def as_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "configuration": self.configuration, "regressed": self.regressed,
                "compared": self.compared, "figures": [f.as_json() for f in self.figures], "note": self.note,
                "differences": list(self.differences)}


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
          window: int = DEFAULT_WINDOW, mixed: bool = False) -> CheckReport:
    """Each run `target` names, judged figure by figure against the median of the `window` runs of its
    configuration dated before it (or against the run `against`, of the same setup unless `mixed`): regressed when
    worse by more than the threshold."""
    if not 0 <= threshold_pct <= 100 or window < 1:
        raise InvalidInput(f"the threshold is a percentage from 0 to 100 and the window at least 1 run; "
                           f"got {threshold_pct:g} and {window}")
    run_ids = runs_to_check(engine, target)
    rows = series_rows(engine)
    baseline_run = None if against == HISTORY else runs_to_check(engine, against)[0]
    differ = {r: _unlike(engine, r, baseline_run, mixed) for r in run_ids} if baseline_run is not None else {}
    if len(run_ids) == 1:
        runs: tuple[RunCheck, ...] = (_check_run(rows, run_ids[0], baseline_run, threshold_pct / 100, window,
                                                 differ.get(run_ids[0], ())),)
    else:  # a campaign: a run with no steady-state figure (a failed attempt) is reported, not fatal
        runs = tuple(_check_run_or_note(rows, run_id, baseline_run, threshold_pct / 100, window,
                                        differ.get(run_id, ())) for run_id in run_ids)
    return CheckReport(target, against, threshold_pct, window, runs)


def _unlike(engine: Engine, run_id: int, baseline_run: int, mixed: bool) -> tuple[str, ...]:
    """What differs between a run and the run named as its baseline (model, accelerator, devices, precision,
    workload); InvalidInput saying it unless `mixed`."""
    first, second = store.run(engine, run_id), store.run(engine, baseline_run)
    if first is None or second is None:
        return ()
    differ = tuple(unlike(first, second))
    if differ and not mixed:
        raise InvalidInput(f"run {run_id} and run {baseline_run} are not like for like ({'; '.join(differ)}): "
                           "nothing compared; pass --mixed to compare them anyway, every difference named")
    return differ


def _check_run(rows: pl.DataFrame, run_id: int, baseline_run: int | None, threshold: float,
               window: int, differences: tuple[str, ...] = ()) -> RunCheck:
    own = rows.filter(pl.col("run_id") == run_id)
    if own.height == 0:
        raise InvalidInput(f"run {run_id} has no steady-state figure to check ({', '.join(METRICS)})")
    first = own.row(0, named=True)
    if baseline_run is not None:
        base = rows.filter(pl.col("run_id") == baseline_run)
    else:
        base = _runs_before(rows, first, window)
    metrics = JUDGED_ON.get(first.get("format") or "", METRICS)
    figures = tuple(f for metric in metrics if (f := _figure(own, base, metric, threshold)) is not None)
    named = first["configuration"] or "configuration unstated"
    note = "" if figures else (f"no run of {named} dated before this one" if baseline_run is None
                               else f"run {baseline_run} has none of this run's figures ({', '.join(metrics)})")
    return RunCheck(run_id, first["configuration"], figures, note, differences)


def _check_run_or_note(rows: pl.DataFrame, run_id: int, baseline_run: int | None, threshold: float,
                       window: int, differences: tuple[str, ...] = ()) -> RunCheck:
    try:
        return _check_run(rows, run_id, baseline_run, threshold, window, differences)
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
