"""`python -m ingest DIR`: a folder imported as campaigns (one per MLPerf submitter's system and benchmark, one for
its other logs), reported as text or JSON, with a progress bar of files and MB on a terminal.

--json prints, per campaign, one object per attempt ({"file", "outcome", "reason", "line", "run_id", "metric",
"value", "unit"}) then one {"campaign": {"id", "name", "kind", "created", "runs", "outcomes", "score", "refused",
"repeats"}} object. Each refused file goes to stderr as FILE:LINE: reason; the exit status is 1 when any file was
refused (the rest is stored), else 0.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from ingest.campaign import CampaignImport, RoundImport, import_round, plan_round
from ingest.campaign_logs import LogJob, LogRead
from ingest.campaign_pool import Tick
from ingest.campaign_score import MEASURED
from ingest.hints import Hints
from perfledger import store
from perfledger.calc.repeats import summarise_repeats
from perfledger.campaigns import CampaignPlan
from perfledger.catalog import Catalog


def ingest_folder(engine: store.Engine, folder: Path, given: Hints, limit: int, *, as_json: bool, dry: bool,
                  known: Catalog | None) -> int:
    """Import (or, dry, only read) the folder; print what happened; 1 when a file was refused."""
    with progress_bar(folder) as tick:
        if dry:
            planned = plan_round(folder, given, limit=limit, known=known, engine=engine, tick=tick)
            planned.close()
            done = RoundImport(planned, tuple(CampaignImport(p, None) for p in planned.plans))
        else:
            done = import_round(engine, folder, given, limit=limit, known=known, tick=tick)
    for refusal in done.plan.refusals:
        print(refusal, file=sys.stderr)
    for one in done.imports:
        if one.error is not None:
            print(one.error, file=sys.stderr)
    for one in done.imports or (CampaignImport(done.plan.only(), None),):  # none: every file was refused
        report = campaign_report(engine, one, dry=dry)
        if as_json:
            for attempt in report.pop("attempts"):
                print(json.dumps(attempt, default=str))
            print(json.dumps({"campaign": report}, default=str))
        else:
            _print_text(report)
    return 1 if done.plan.refusals or any(one.error for one in done.imports) else 0


@contextmanager
def progress_bar(folder: Path) -> Iterator[Tick | None]:
    """A bar on stderr (a terminal only) counting the folder's logs read and their MB."""
    if not sys.stderr.isatty():
        yield None
        return
    # tqdm loads only to draw a progress bar on a terminal, not for every import
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(unit="B", unit_scale=True, desc=f"{folder.name}: 0 files", file=sys.stderr, leave=False)
    count = 0

    def tick(_read: LogRead, job: LogJob) -> None:
        nonlocal count
        count += 1
        bar.set_description_str(f"{folder.name}: {count:,} files", refresh=False)
        bar.update(_bytes(job.path))

    try:
        yield tick
    finally:
        bar.close()


def _bytes(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def campaign_report(engine: store.Engine, done: CampaignImport, *, dry: bool = False) -> dict[str, Any]:
    """The campaign as stored (or, on a dry run, as read): attempts, runs, outcomes by kind, score, repeats."""
    plan, saved = done.plan, done.saved
    # A campaign stored now is its plan with the run ids it was given (a round's 167 reads of the store took 30 s
    # under load); one stored before is read back as stored.
    frame = store.outcomes(engine, saved.campaign_id) if saved is not None and not saved.created \
        else _plan_frame(plan, saved.run_ids if saved is not None else ())
    attempts = [{"file": r["file_name"], "outcome": r["kind"], "reason": r["reason"], "line": r["line"],
                 "run_id": r["run_id"], "metric": r["metric"], "value": r["value"], "unit": r["unit"]}
                for r in frame.iter_rows(named=True)]
    repeats = summarise_repeats(frame.select("configuration", "kind", "metric", "value", "unit"), MEASURED)
    return {"id": saved.campaign_id if saved else None, "name": plan.name, "kind": plan.kind.value,
            "created": saved.created if saved else False, "dry_run": dry,
            "runs": list(saved.run_ids) if saved else [], "outcomes": store.outcome_counts(frame),
            "score": {"value": plan.score.value, "unit": plan.score.unit, "rule": plan.score.rule,
                      "note": plan.score.note},
            "meta": {k: v for k, v in plan.meta.items() if k in ("submission", "systems", "configs", "job_table", "documents",
                                                             "results_folder")},
            "refused": list(plan.refusals), "repeats": repeats.to_dicts(), "attempts": attempts, "error": done.error}


def _plan_frame(plan: CampaignPlan, run_ids: tuple[int, ...] = ()) -> pl.DataFrame:
    """The plan's attempts as outcome rows; `run_ids` are the stored runs of the attempts that have one, in order."""
    given = iter(run_ids)
    rows = [a.as_row() | {"run_id": next(given, None) if a.prepared is not None else None,
                          "configuration": json.dumps(dict(a.configuration), sort_keys=True, default=str)}
            for a in plan.attempts]
    return pl.DataFrame(rows, schema={"file_name": pl.String, "line": pl.Int64, "kind": pl.String,
                                      "reason": pl.String, "metric": pl.String, "value": pl.Float64,
                                      "unit": pl.String, "run_id": pl.Int64, "configuration": pl.String})


def _print_text(report: dict[str, Any]) -> None:
    state = ("dry run, nothing stored" if report["dry_run"] else f"not stored: {report['error']}" if report["error"]
             else "nothing stored: every file was refused" if report["id"] is None else f"stored as campaign {report['id']}" if report["created"]
             else f"already stored as campaign {report['id']}")
    print(f"{report['name']}: {report['kind']}, {len(report['attempts'])} attempts, {state}")
    for a in report["attempts"]:
        figure = f"{a['metric']} {a['value']:,.6g} {a['unit']}" if a["value"] is not None else "no figure"
        why = f" ({a['reason']}" + (f", line {a['line']})" if a["line"] else ")") if a["reason"] else ""
        run = f", run {a['run_id']}" if a["run_id"] is not None else ""
        print(f"  {a['file']}: {a['outcome']}{why}, {figure}{run}")
    print("  outcomes: " + ", ".join(f"{n} {kind}" for kind, n in report["outcomes"].items()))
    score = report["score"]
    shown = f"{score['value']:,.6g} {score['unit']}" if score["value"] is not None else "none"
    print(f"  score: {shown} — {score['rule']}" + (f"; {score['note']}" if score["note"] else ""))
    for r in report["repeats"]:
        if r["n"] > 1:
            print(f"  repeats {r['configuration']}: {r['metric']} median {r['median']:,.6g} (IQR {r['q1']:,.6g}-"
                  f"{r['q3']:,.6g}, min-max {r['min']:,.6g}-{r['max']:,.6g}, n={r['n']})")
