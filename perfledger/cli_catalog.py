"""python -m perfledger catalog add FILE.csv [--dry-run] | link "printed name" ID | unlinked | rules add|list.

`add` reports every row (added, updated, or refused with `FILE:LINE: reason` on stderr) and stores the rows only
when none is refused; exit 1 when any is. `link` links the stored results printed with a name to a catalog id:
those of one source (`--source`, else the only source printing it), or of every source with `--all-sources`,
which also makes the name an alias of the id. `unlinked` lists the printed names no catalog row claims, with their
row counts and nearest ids. `rules` adds or lists MLPerf scoring rules (perfledger/cli_rules.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfledger import cli_rules, store
from perfledger.catalog.resolve import nearest_ids
from perfledger.catalog.validate import read_catalog_file
from perfledger.errors import InvalidInput, UnknownId


def register(sub: Any) -> None:
    """Add the `catalog` command and its subcommands to the CLI's subparsers."""
    cat = sub.add_parser("catalog", help="add or update models and accelerators; link printed names to them")
    actions = cat.add_subparsers(dest="catalog_command", required=True)
    db_help = "SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)"
    add = actions.add_parser("add", help="add or update rows from a CSV with data/models.csv's or "
                                         "data/accelerators.csv's columns (id required)")
    add.add_argument("file", type=Path)
    add.add_argument("--dry-run", action="store_true", help="check every row and store nothing")
    link = actions.add_parser("link", help="link every stored row with this printed name to a catalog id")
    link.add_argument("name", help="the name as printed")
    link.add_argument("id", help="the catalog id (model or accelerator)")
    link.add_argument("--kind", choices=("model", "accelerator"), help="when the id exists as both")
    scope = link.add_mutually_exclusive_group()
    scope.add_argument("--source", help="link the rows of this source only (default: the one source printing it)")
    scope.add_argument("--all-sources", action="store_true",
                       help="link the rows of every source and make the name an alias for future imports")
    unlinked = actions.add_parser("unlinked", help="printed names no catalog row claims, with counts")
    for p in (add, link, unlinked):
        p.add_argument("--db", help=db_help)
    cli_rules.register(actions)


def run(args: argparse.Namespace) -> int:
    commands = {"add": cmd_add, "link": cmd_link, "unlinked": cmd_unlinked, "rules": cli_rules.run}
    return commands[args.catalog_command](args)


def cmd_add(args: argparse.Namespace) -> int:
    engine = store.engine_from_url(args.db)
    current = store.catalog_record(engine)
    source_ids = frozenset(store.sources(engine)["id"].to_list())
    checked = read_catalog_file(args.file, current, source_ids)
    for v in checked.verdicts:
        if v.action == "refused":
            print(f"{args.file}:{v.line}: {v.reason}", file=sys.stderr)
            continue
        remarks = "".join(f"; {r}" for r in v.remarks)
        print(f"{args.file}:{v.line}: {'would ' if args.dry_run else ''}{v.action} {checked.kind} {v.id}{remarks}")
    refused, accepted = len(checked.refused), len(checked.accepted)
    if refused or args.dry_run:
        verdict = f"{refused} refused" if refused else "no row refused"
        print(f"{args.file}: {accepted} {checked.kind} rows valid, {verdict}; nothing stored"
              + (" (dry run)" if args.dry_run else ": fix the refused rows and run again"), file=sys.stderr)
        return 1 if refused else 0
    done = store.save_catalog_rows(engine, checked.kind, [v.row for v in checked.accepted if v.row])
    print(f"{store.mask_url(str(engine.url))}: {done.added} {checked.kind} rows added, {done.updated} updated; "
          f"{done.relinked} stored result rows linked by the new names")
    return 0


def cmd_link(args: argparse.Namespace) -> int:
    engine = store.engine_from_url(args.db)
    kind = args.kind or _kind_of(engine, args.id)
    done = store.link_name(engine, kind, args.name, args.id, source_id=args.source, all_sources=args.all_sources)
    print(done.describe(kind, args.name, args.id))
    return 0


def _kind_of(engine: Any, ident: str) -> str:
    current = store.catalog_record(engine)
    kinds = [k for k in ("model", "accelerator") if ident in current.rows(k)]
    if len(kinds) > 1:
        raise InvalidInput(f"{ident} is both a model and an accelerator id; say which with --kind")
    if not kinds:
        near = nearest_ids("model", ident, current) + nearest_ids("accelerator", ident, current)
        raise UnknownId("catalog", ident, near)
    return kinds[0]


def cmd_unlinked(args: argparse.Namespace) -> int:
    frame = store.unlinked_names(store.engine_from_url(args.db))
    for r in frame.iter_rows(named=True):
        print(f"{r['kind']:<11} {r['rows']:>5} rows  {r['printed_name']!r}  nearest: {r['nearest']}")
    print(f"{frame.height} unlinked names", file=sys.stderr)
    return 0
