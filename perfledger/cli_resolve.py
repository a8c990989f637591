"""python -m perfledger resolve [list [--json] | set FIELD "PRINTED" ANSWER [--note TEXT]] [--db URL].

`list` prints the resolve queue: each printed cell a claims import could not read yet (metric, unit, value,
precision, workload, source kind, evidence) and each printed model or accelerator name no catalog row claims, with
the stored rows that print it and the command that answers it. `set` answers one: the answer is checked, saved as
a row of data/resolutions.csv in the data folder (PERFLEDGER_DATA_DIR, else data/), read by every later import,
and every stored row printing the cell is read again with it now (a name is linked for every source and becomes an
alias). Exit 0 done, 2 an answer that cannot stand (nothing saved).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from perfledger import store
from perfledger.catalog.resolve import nearest_ids
from perfledger.errors import UnknownId
from perfledger.resolutions import FIELDS, answers, resolutions_path, save_answer


def register(sub: Any) -> None:
    """Add the `resolve` command and its subcommands to the CLI's subparsers."""
    res = sub.add_parser("resolve", help="list the printed cells and names an import could not read; answer one")
    actions = res.add_subparsers(dest="resolve_command")
    db_help = "SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)"
    listing = actions.add_parser("list", help="every unread cell and unlinked name, with its rows and command")
    listing.add_argument("--json", action="store_true", help="one JSON object per entry")
    answer = actions.add_parser("set", help="answer one printed cell or name for every stored row and later import")
    answer.add_argument("field", choices=FIELDS)
    answer.add_argument("printed", help="the cell as printed (case and spaces aside)")
    answer.add_argument("answer", help="what it means: a metric, unit, precision, workload, source kind, evidence "
                                       "level, or a catalog id for a model or accelerator")
    answer.add_argument("--note", default="", help="why (kept in data/resolutions.csv)")
    for p in (res, listing, answer):
        p.add_argument("--db", help=db_help)


def run(args: argparse.Namespace) -> int:
    return cmd_set(args) if args.resolve_command == "set" else cmd_list(args)


def cmd_list(args: argparse.Namespace) -> int:
    frame = store.to_resolve(store.engine_from_url(args.db))
    for row in frame.iter_rows(named=True):
        if getattr(args, "json", False):
            print(json.dumps(row))
            continue
        hint = f" (suggestion: {row['suggestion']})" if row["suggestion"] else ""
        print(f"{row['field']:<12} {row['rows']:>5} rows  {row['printed']!r}: {row['reason']}{hint}"
              + (f"\n{'':<19}{row['command']}" if row["command"] else ""))
    print(f"{frame.height} to resolve", file=sys.stderr)
    return 0


def cmd_set(args: argparse.Namespace) -> int:
    engine = store.engine_from_url(args.db)
    if args.field in ("model", "accelerator") and args.answer not in store.catalog_record(engine).rows(args.field):
        raise UnknownId(args.field, args.answer, nearest_ids(args.field, args.answer, store.catalog_record(engine)))
    path = resolutions_path()
    replaced = save_answer(args.field, args.printed, args.answer, args.note, path=path)
    changed = store.apply_answer(engine, args.field, args.printed, answers())
    print(f"{args.field} {args.printed!r} = {args.answer}: {changed:,} stored rows read again; "
          f"{'replaced in' if replaced else 'saved to'} {path} for every later import")
    return 0
