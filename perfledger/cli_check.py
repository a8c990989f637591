"""python -m perfledger check RUN|campaign:ID [--against history|RUN] [--threshold PCT] [--window N] [--json], for CI.

Exit 0: every steady-state figure is within the threshold of the configuration's recent history (or of the named
run), or there is nothing to compare it with (said); 1: a regression (the report says which figure moved, by how
much, against which runs); 2: bad input (no such run, a run with no figure to check, or a named run of another model,
accelerator, devices, precision or workload, said in one sentence), as the CLI's other usage errors.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from perfledger import names, numbers, store
from perfledger.views.check import HISTORY, CheckReport, RunCheck, check
from perfledger.views.history import DEFAULT_THRESHOLD_PCT, DEFAULT_WINDOW, METRIC_LABELS


def register(sub: Any) -> None:
    """Add the `check` command to the CLI's subparsers."""
    cmd = sub.add_parser("check", help="exit 1 when a run is slower than its configuration's recent history")
    cmd.add_argument("target", metavar="RUN", help="the run id to check (as `python -m ingest --json` prints), or campaign:ID for every run of a campaign")
    cmd.add_argument("--against", default=HISTORY,
                     help="'history' (the configuration's runs dated before it; default) or a baseline run id")
    cmd.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD_PCT, metavar="PCT",
                     help=f"how many percent worse is a regression (default {DEFAULT_THRESHOLD_PCT:g})")
    cmd.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="N",
                     help=f"how many earlier runs the history baseline takes the median of (default {DEFAULT_WINDOW})")
    cmd.add_argument("--mixed", action="store_true",
                     help="compare with a named run of another model, accelerator, devices, precision or workload "
                          "(refused otherwise); every difference is named beside the result")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON object")
    cmd.add_argument("--db", help="SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")


def run(args: argparse.Namespace) -> int:
    report = check(store.engine_from_url(args.db), args.target, against=args.against, threshold_pct=args.threshold,
                   window=args.window, mixed=args.mixed)
    if args.json:
        print(json.dumps(report.as_json(), indent=1))
    else:
        for line in report_lines(report):
            print(line)
    return 1 if report.regressed else 0


def report_lines(report: CheckReport) -> list[str]:
    """The report as text: a verdict per run, then one line per figure compared."""
    lines = []
    for r in report.runs:
        lines.append(f"run {r.run_id} ({r.configuration or 'configuration unstated'}): {_verdict(r, report)}")
        if r.differences:
            lines.append(f"  not like for like, compared as asked: {'; '.join(r.differences)}")
        for f in r.figures:
            moved = "worse" if f.worse > 0 else "better"
            label = METRIC_LABELS[f.metric]
            lines.append(f"  {'REGRESSION ' if f.regressed else ''}{label[:1].upper()}{label[1:]}: "
                         f"{_figure(f.metric, f.value)} vs {_figure(f.metric, f.baseline)}, "
                         f"{numbers.percent_text(abs(f.worse))} {moved}; against run{'s' if len(f.against) > 1 else ''} "
                         f"{', '.join(map(str, f.against))}")
    return lines


def _figure(metric: str, value: float) -> str:
    """A checked figure as every surface reads it (perfledger.numbers): a share in %, else at the rule's precision."""
    return numbers.percent_text(value) if names.shown_unit(metric) == names.PERCENT else numbers.text(value)


def _verdict(r: RunCheck, report: CheckReport) -> str:
    if not r.compared:
        return f"nothing to compare: {r.note}" if r.note else "nothing to compare"
    against = "its configuration's recent history" if report.against == HISTORY else f"run {report.against}"
    if r.regressed:
        return f"REGRESSION: more than {report.threshold_pct:g}% worse than {against}"
    return f"pass: within {report.threshold_pct:g}% of {against}"
