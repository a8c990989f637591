"""python -m perfledger runs set RUN FIELD=VALUE... [--reason TEXT] | runs corrections [RUN]: a run's identity
corrected in place, and the corrections kept.

`set` recomputes everything derived from the run's stored steps (ingest.corrections, in a child process, so that
perfledger never imports ingest); read-only and token rules as `delete`. Exit 0 done, 1 refused, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfledger import corrections, store
from perfledger.errors import InvalidInput
from perfledger.settings import load_settings
from perfledger.store.corrections import corrections as stored_corrections


def register(sub: Any) -> None:
    """Add the `runs` command (set, corrections) to the CLI's subparsers."""
    runs = sub.add_parser("runs", help="correct a run's identity (model, accelerator, devices, precision, ...)")
    inner = runs.add_subparsers(dest="runs_command", required=True)
    put = inner.add_parser("set", help="set FIELD=VALUE on a run and recompute its figures")
    put.add_argument("run", type=int)
    put.add_argument("assignments", nargs="+", metavar="FIELD=VALUE",
                     help=f"fields: {', '.join(corrections.EDITABLE)} (also devices, gbs, mbs, seq)")
    put.add_argument("--reason", help="why: kept with the correction")
    put.add_argument("--token", default=os.environ.get("PERFLEDGER_TOKEN", ""),
                     help="the upload token, when one is set (default: PERFLEDGER_TOKEN)")
    listed = inner.add_parser("corrections", help="the corrections kept (of one run, or every run)")
    listed.add_argument("run", type=int, nargs="?")
    for p in (put, listed):
        p.add_argument("--db", help="SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")


def run(args: argparse.Namespace) -> int:
    if args.runs_command == "corrections":
        frame = stored_corrections(store.engine_from_url(args.db), args.run)
        sys.stdout.write(frame.write_csv())
        return 0
    corrections.parse(args.assignments)  # bad input said here, before a child starts
    settings = load_settings()
    if settings.read_only:
        raise InvalidInput("the store is read-only (PERFLEDGER_READ_ONLY=1): nothing can be corrected")
    if not settings.may_write_with(args.token):
        raise InvalidInput("writing is protected: give the upload token with --token or PERFLEDGER_TOKEN")
    return _child(store.engine_from_url(args.db), [str(args.run), *args.assignments,
                                                   *(["--reason", args.reason] if args.reason else [])])


def _child(engine: Any, argv: list[str]) -> int:
    """`python -m ingest.corrections ARGV` on the same store; the URL travels in the environment."""
    sys.stdout.flush()
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = os.environ | {"PERFLEDGER_DB_URL": engine.url.render_as_string(hide_password=False), "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-m", "ingest.corrections", *argv], env=env, check=False).returncode
