"""python -m perfledger keys add KEY COLUMN [UNIT] [--framework F] [--requires KEY] [--identifies] | add FILE.csv |
list [--column C] [--framework F].

The key vocabulary (data/metric_keys.csv, see perfledger/metric_keys.py) is data: `add` appends a row, or every row
of a CSV with the vocabulary's header, after checking each (a refused row is `FILE:LINE: reason` on stderr and
nothing is written; exit 1); `--dry-run` checks and writes nothing. A user's row comes before the bundled rows of
the same spelling. A CSV with the header of data/frameworks.csv (how a framework's log is recognised and read) or
of data/config_keys.csv (what its configuration lines state) adds to that file the same way (perfledger.frameworks).
`list` prints the rows, with the columns and units a row may name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfledger.errors import DataFileError, InvalidInput
from perfledger.frameworks import CONFIG_HEADER, FRAMEWORK_HEADER, add_file_rows, header_of
from perfledger.metric_keys import COLUMNS, UNITS, KeyRow, add_rows, check_row, load_vocabulary, parse_rows


def register(sub: Any) -> None:
    """Add the `keys` command and its subcommands to the CLI's subparsers."""
    keys = sub.add_parser("keys", help="the key vocabulary: how the names a framework logs map to step columns")
    actions = keys.add_subparsers(dest="keys_command", required=True)
    add = actions.add_parser("add", help="add a key spelling (KEY COLUMN [UNIT]) or the rows of a CSV file")
    add.add_argument("key", help="the name as logged (`*` matches any text), or a CSV file of rows")
    add.add_argument("column", nargs="?", help=f"one of: {', '.join(COLUMNS)}")
    add.add_argument("unit", nargs="?", default="", help="one of: " + ", ".join(repr(u) for u in UNITS).replace("%", "%%"))  # argparse formats help with %
    add.add_argument("--framework", default="*", help="the framework that logs it (default: *, any)")
    add.add_argument("--requires", default="", help="another key that must be in the same file")
    add.add_argument("--identifies", action="store_true", help="only this framework logs the key")
    add.add_argument("--note", default="")
    add.add_argument("--dry-run", action="store_true", help="check and write nothing")
    show = actions.add_parser("list", help="print the vocabulary's rows")
    show.add_argument("--column", help="only the rows of this column")
    show.add_argument("--framework", help="only the rows of this framework")


def run(args: argparse.Namespace) -> int:
    return cmd_add(args) if args.keys_command == "add" else cmd_list(args)


def cmd_add(args: argparse.Namespace) -> int:
    if args.column is None and Path(args.key).is_file():
        text = _text(Path(args.key))
        if header_of(text) in (FRAMEWORK_HEADER, CONFIG_HEADER):
            path, count = add_file_rows(text, args.key, dry_run=args.dry_run)
            print(f"{'would add' if args.dry_run else 'added'} {count} row(s) to {path}")
            return 0
    rows = _rows(args)
    if args.dry_run:
        for row in rows:
            print(f"would add: {row.key} -> {row.column} ({row.unit or 'no unit'})")
        return 0
    path = add_rows(rows)
    for row in rows:
        print(f"added to {path}: {row.key} -> {row.column} ({row.unit or 'no unit'})")
    return 0


def _rows(args: argparse.Namespace) -> list[KeyRow]:
    if args.column is None:
        path = Path(args.key)
        if not path.is_file():
            raise InvalidInput(f"give KEY COLUMN [UNIT], or a CSV file of rows; {args.key!r} is no file")
        return parse_rows(_text(path), str(path))
    fields = {"framework": args.framework, "key": args.key, "column": args.column, "unit": args.unit,
              "requires": args.requires, "identifies": "yes" if args.identifies else "", "note": args.note}
    try:
        return [check_row(fields, "keys add", None)]
    except DataFileError as exc:  # the arguments are at fault, not a file: a usage error
        raise InvalidInput(str(exc)) from None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataFileError(str(path), None, "not UTF-8 text") from None


def cmd_list(args: argparse.Namespace) -> int:
    for row in load_vocabulary().rows:
        if (args.column and row.column != args.column) or (args.framework and row.framework != args.framework):
            continue
        extra = "".join((f" requires {row.requires}" if row.requires else "",
                         f" identifies {row.framework}" if row.identifies else "",
                         " (added by the user)" if row.origin else ""))
        print(f"{row.framework:<14} {row.key:<40} {row.column:<34} {row.unit or '-':<9}{extra}")
    sys.stdout.flush()
    return 0
