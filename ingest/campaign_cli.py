"""`python -m ingest DIR`: a folder imported as one campaign, reported as text or JSON.

--json prints one object per attempt ({"file", "outcome", "reason", "line", "run_id", "metric", "value", "unit"})
and ends with one {"campaign": {"id", "name", "kind", "created", "runs", "outcomes", "score", "refused",
"repeats"}} object. Each refused file goes to stderr as FILE:LINE: reason; the exit status is 1 when any file was
refused (the rest is stored), else 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl

from ingest.campaign import CampaignImport, import_folder, plan_folder
from ingest.campaign_score import MEASURED
from ingest.hints import Hints
from perfledger import store
from perfledger.calc.repeats import summarise_repeats
from perfledger.campaigns import CampaignPlan
from perfledger.catalog import Catalog


def ingest_folder(engine: store.Engine, folder: Path, given: Hints, limit: int, *, as_json: bool, dry: bool,
                  known: Catalog | None) -> int:
    """Import (or, dry, only read) the folder; print what happened; 1 when a file was refused."""
    if dry:
        plan = plan_folder(folder, given, limit=limit, known=known, engine=engine)
        plan.close()
        done = CampaignImport(plan, None)
    else:
        done = import_folder(engine, folder, given, limit=limit, known=known)
    report = campaign_report(engine, done, dry=dry)
    for refusal in done.plan.refusals:
        print(refusal, file=sys.stderr)
    if as_json:
        for attempt in report.pop("attempts"):
            print(json.dumps(attempt, default=str))
        print(json.dumps({"campaign": report}, default=str))
    else:
        _print_text(report)
    return 1 if done.plan.refusals else 0


def campaign_report(engine: store.Engine, done: CampaignImport, *, dry: bool = False) -> dict[str, Any]:
    """The campaign as stored (or, on a dry run, as read): attempts, runs, outcomes by kind, score, repeats."""
    plan, saved = done.plan, done.saved
    frame = store.outcomes(engine, saved.campaign_id) if saved is not None else _plan_frame(plan)
    attempts = [{"file": r["file_name"], "outcome": r["kind"], "reason": r["reason"], "line": r["line"],
                 "run_id": r["run_id"], "metric": r["metric"], "value": r["value"], "unit": r["unit"]}
                for r in frame.iter_rows(named=True)]
    repeats = summarise_repeats(frame.select("configuration", "kind", "metric", "value", "unit"), MEASURED)
    return {"id": saved.campaign_id if saved else None, "name": plan.name, "kind": plan.kind.value,
            "created": saved.created if saved else False, "dry_run": dry,
            "runs": list(saved.run_ids) if saved else [], "outcomes": store.outcome_counts(frame),
            "score": {"value": plan.score.value, "unit": plan.score.unit, "rule": plan.score.rule,
                      "note": plan.score.note},
            "meta": {k: v for k, v in plan.meta.items() if k in ("submission", "systems", "configs", "job_table", "documents")},
            "refused": list(plan.refusals), "repeats": repeats.to_dicts(), "attempts": attempts}


def _plan_frame(plan: CampaignPlan) -> pl.DataFrame:
    rows = [a.as_row() | {"run_id": None, "configuration": json.dumps(dict(a.configuration), sort_keys=True,
                                                                      default=str)} for a in plan.attempts]
    return pl.DataFrame(rows, schema={"file_name": pl.String, "line": pl.Int64, "kind": pl.String,
                                      "reason": pl.String, "metric": pl.String, "value": pl.Float64,
                                      "unit": pl.String, "run_id": pl.Int64, "configuration": pl.String})


def _print_text(report: dict[str, Any]) -> None:
    state = ("dry run, nothing stored" if report["dry_run"] else "nothing stored: every file was refused"
             if report["id"] is None else f"stored as campaign {report['id']}" if report["created"]
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
