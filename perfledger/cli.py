"""python -m perfledger: init | rebuild | calc | export | audit | copy | backup | restore (perfledger/cli_backup.py) |
catalog (perfledger/cli_catalog.py) | keys (perfledger/cli_keys.py) | check (perfledger/cli_check.py) |
compare (perfledger/cli_compare.py) | runs set|corrections (perfledger/cli_runs.py) |
resolve (perfledger/cli_resolve.py).

The one place the CLI turns a PerfledgerError into `error: <sentence>` on stderr and an exit code:
0 done, 1 the store or data refused, 2 a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfledger import cli_backup, cli_catalog, cli_check, cli_compare, cli_keys, cli_resolve, cli_runs, store, views
from perfledger.errors import InvalidInput, InvalidQuery, PerfledgerError, UnknownId
from perfledger.figures import compute
from perfledger.settings import load_settings
from perfledger.store.claims import delete_source
from perfledger.views import registry

USAGE_ERRORS = (InvalidInput, UnknownId, InvalidQuery)
PAGES = registry.slugs()  # the export command's choices: the page registry's slugs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m perfledger", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def with_db(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--db", help="SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")
        return p

    init = with_db(sub.add_parser("init", help="build the store from data/ (idempotent)"))
    init.add_argument("--data", type=Path, help="folder of curated CSVs (default: PERFLEDGER_DATA_DIR, else data/)")
    rebuild = with_db(sub.add_parser("rebuild", help="drop every table and build the store again from data/"))
    rebuild.add_argument("--data", type=Path)

    calc = with_db(sub.add_parser("calc", help="compute one figure: calc NAME key=value ..."))
    calc.add_argument("name")
    calc.add_argument("args", nargs="*", metavar="key=value")
    calc.add_argument("--json", action="store_true", help="print {name, value, unit, formula, inputs}")

    export = with_db(sub.add_parser("export", help="print the table a page shows for a URL query string"))
    export.add_argument("page", choices=PAGES)
    export.add_argument("query", nargs="?", default="", help='the URL query string, e.g. "m=llama2-70b"')
    export.add_argument("--format", choices=("csv", "json"), default="csv")

    audit = with_db(sub.add_parser(
        "audit", help="check every claim (TFLOPS, MFU/HFU, time to train, scaling) against its own inputs"))
    audit.add_argument("--format", choices=("table", "csv", "json"), default="table")
    audit.add_argument("--cross-source", action="store_true",
                       help="also check a claim against other sources' figures of the same configuration")

    copy = sub.add_parser("copy", help="copy a whole ledger between stores (DuckDB, PostgreSQL, DuckLake)")
    copy.add_argument("--from", dest="src", required=True, help="source store URL")
    copy.add_argument("--to", dest="dst", required=True, help="destination store URL (must be empty)")
    delete = with_db(sub.add_parser("delete", help="remove an ingested run or an imported source's claims"))
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", type=int, help="run id (its steps and results go with it)")
    which.add_argument("--source", help="id of an imported source (curated sources are refused)")
    delete.add_argument("--token", default=os.environ.get("PERFLEDGER_TOKEN", ""),
                        help="the upload token, when one is set (default: PERFLEDGER_TOKEN)")
    cli_backup.register(sub)
    cli_catalog.register(sub)
    cli_resolve.register(sub)
    cli_keys.register(sub)
    cli_check.register(sub)
    cli_compare.register(sub)
    cli_runs.register(sub)
    return parser


def _key_values(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"arguments are key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def cmd_init(args: argparse.Namespace, *, rebuild: bool = False) -> int:
    engine = store.engine_from_url(args.db)
    data_dir = args.data or load_settings().data_dir
    report = (store.rebuild_store if rebuild else store.init_store)(engine, data_dir)
    where = store.mask_url(str(engine.url))
    added = ", ".join(f"{n} {table}" for table, n in report.inserted.items())
    print(f"{where}: {'rebuilt' if rebuild else 'initialised'}; added {added}" if report.changed
          else f"{where}: already up to date; nothing added")
    for u in report.unresolved:
        print(f"unresolved: {u.file}:{u.line}: {u.kind} {u.name!r} (nearest: {', '.join(u.nearest) or 'none'}); "
              "row kept with no id", file=sys.stderr)
    sys.stdout.flush()  # before the child's lines
    return _ingest_demo_runs(engine, data_dir)


def _ingest_demo_runs(engine: Any, data_dir: Path) -> int:
    """`python -m ingest --demo` in a child process, on the same store: the demo logs (data/logs/manifest.csv),
    idempotent (same bytes, same run). A child, so that perfledger never imports ingest; it prints what it added.
    The URL travels in the environment, not on a command line other users can read."""
    root = str(Path(__file__).resolve().parents[1])  # where ingest/ sits beside perfledger/
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = os.environ | {"PERFLEDGER_DB_URL": store.url_of(engine),
                        "PERFLEDGER_DATA_DIR": str(data_dir), "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-m", "ingest", "--demo"], env=env, check=False)
    return done.returncode


def cmd_calc(args: argparse.Namespace) -> int:
    figure = compute(args.name, _key_values(args.args), store.engine_from_url(args.db))
    if args.json:
        print(json.dumps(figure.as_json(), indent=2, default=str))
        return 0
    print(f"{figure.name} = {figure.value:,.6g} {figure.unit}")
    for note in figure.notes:
        print(f"  {note}")
    print(f"formula: {figure.formula}")
    print("inputs: " + " ".join(f"{k}={v}" for k, v in figure.inputs.items()))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    data = views.export(args.page, args.query, store.engine_from_url(args.db), fmt=args.format)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


def audit_frame(engine: Any, *, cross_source: bool = False) -> Any:
    return views.audit_table(views.AuditView(cross_source=cross_source), engine)


def figure(value: float | None, unit: str | None) -> str:
    """An audited figure in its own metric's unit: a fraction as a percentage, a ratio with "x", else value unit.

    >>> figure(0.4512, "fraction"), figure(836.0, "TFLOP/s/device"), figure(None, "x")
    ('45.1%', '836.0 TFLOP/s/device', '-')
    """
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "fraction":
        return f"{value:.1%}"
    if unit == "x":
        return f"{value:.3g}x"
    return f"{value:,.1f} {unit or ''}".rstrip() if abs(value) >= 10 else f"{value:.3g} {unit or ''}".rstrip()


def cmd_audit(args: argparse.Namespace) -> int:
    frame = audit_frame(store.engine_from_url(args.db), cross_source=args.cross_source)
    if args.format == "csv":  # as every CSV perfledger writes: text cells a spreadsheet would run are neutralised
        sys.stdout.buffer.write(views.render(frame, "csv"))
        sys.stdout.flush()
    elif args.format == "json":
        rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                for r in frame.iter_rows(named=True)]
        print(json.dumps(rows, indent=1, default=str))
    else:
        for r in frame.iter_rows(named=True):
            print(f"{r['verdict']:<16} {r['plausibility'] or '':<11} {r['source_id']}: {r['metric']} of "
                  f"{r['model_id']} on {r['accelerator_id']} reported {figure(r['reported'], r['unit'])} "
                  f"recomputed {figure(r['recomputed'], r['unit'])}  {r['explanation'] or ''}"
                  + (f"  [inputs: {r['inputs']}]" if r["inputs"] else ""))
        counts = frame["verdict"].value_counts(sort=True).iter_rows()
        print("; ".join(f"{n} {v}" for v, n in counts), file=sys.stderr)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """Read-only and token rules as in the dashboard: refused when read-only, or when the token does not match."""
    settings = load_settings()
    if settings.read_only:
        raise InvalidInput("the store is read-only (PERFLEDGER_READ_ONLY=1): nothing can be deleted")
    if not settings.may_write_with(args.token):
        raise InvalidInput("writing is protected: give the upload token with --token or PERFLEDGER_TOKEN")
    engine = store.engine_from_url(args.db)
    if args.run is not None:
        if not store.delete_run(engine, args.run):
            raise InvalidInput(f"no run {args.run} in the store")
        print(f"deleted run {args.run} with its steps and results")
        return 0

    print(f"deleted source {args.source!r} and its {delete_source(engine, args.source)} results")
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    report = store.copy_store(store.engine_from_url(args.src), store.engine_from_url(args.dst))
    print("copied " + ", ".join(f"{n} {t}" for t, n in report.items()) + "; row counts verified")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # SQLAlchemy logs a rollback that fails after a fault (a full disk) with a traceback; the fault is said below.
    logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {
        "init": cmd_init,
        "rebuild": lambda a: cmd_init(a, rebuild=True),
        "calc": cmd_calc,
        "export": cmd_export,
        "audit": cmd_audit,
        "copy": cmd_copy,
        "backup": cli_backup.cmd_backup,
        "restore": cli_backup.cmd_restore,
        "delete": cmd_delete,
        "catalog": cli_catalog.run,
        "resolve": cli_resolve.run,
        "keys": cli_keys.run,
        "check": cli_check.run,
        "compare": cli_compare.run,
        "runs": cli_runs.run,
    }
    try:
        return commands[args.command](args)
    except USAGE_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PerfledgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except store.FAULT_TYPES as exc:  # a driver's or the OS's fault of the store that escaped its translation
        fault = _store_fault(exc, args)
        if fault is None:
            raise
        print(f"error: {fault}", file=sys.stderr)
        return 1


def _store_fault(exc: Exception, args: argparse.Namespace) -> PerfledgerError | None:
    """`exc` as the store's fault (the store the command writes to), or None when it is not one (a bug)."""
    url = getattr(args, "dst", None) or getattr(args, "db", None)
    try:
        return store.store_fault(exc, store.engine_from_url(url))
    except PerfledgerError as unusable:
        return unusable
