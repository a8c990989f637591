"""python -m perfledger catalog rules add FILE.csv [--dry-run] | list.

MLCommons' scoring rules per MLPerf benchmark (data/mlperf_scoring.csv, see perfledger/mlperf_rules.py) are data:
`add` checks every row of a CSV with the table's header (a refused row is `FILE:LINE: reason` on stderr, one
sentence each) and appends the rows only when none is refused; exit 1 when any is. A benchmark already in the
table is refused (edit its row in the file instead). `--dry-run` checks and writes nothing. `list` prints the
table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfledger.errors import DataFileError, InvalidInput
from perfledger.mlperf_rules import HEADER, RuleRow, add_rules, check_rules, load_rule_rows, rules_path


def register(actions: Any) -> None:
    """Add `rules` and its subcommands to the `catalog` command's subparsers."""
    rules = actions.add_parser("rules", help="MLCommons' scoring rule per MLPerf benchmark (data/mlperf_scoring.csv)")
    verbs = rules.add_subparsers(dest="rules_command", required=True)
    add = verbs.add_parser("add", help=f"add the rows of a CSV file with the columns {','.join(HEADER)}")
    add.add_argument("file", type=Path)
    add.add_argument("--dry-run", action="store_true", help="check every row and write nothing")
    verbs.add_parser("list", help="print every benchmark's rule")


def run(args: argparse.Namespace) -> int:
    return cmd_add(args) if args.rules_command == "add" else cmd_list(args)


def cmd_add(args: argparse.Namespace) -> int:
    checked = check_rules(_read(args.file), str(args.file))
    known = {row.rule.benchmark: row.line for row in load_rule_rows()}
    refused = list(checked.refused) + [_already_there(row, str(args.file), known[row.rule.benchmark])
                                       for row in checked.rows if row.rule.benchmark in known]
    accepted = [row for row in checked.rows if row.rule.benchmark not in known]
    for exc in sorted(refused, key=lambda e: e.line or 0):
        print(exc, file=sys.stderr)
    if refused or args.dry_run:
        for row in accepted:
            print(f"{args.file}:{row.line}: would add {row.rule.benchmark}: {row.rule.describe()}")
        tail = " (dry run)" if args.dry_run and not refused else ": fix the refused rows and run again"
        print(f"{args.file}: {len(accepted)} rules valid, {len(refused)} refused; nothing written{tail}",
              file=sys.stderr)
        return 1 if refused else 0
    path = add_rules(accepted)
    for row in accepted:
        print(f"added to {path}: {row.rule.benchmark}: {row.rule.describe()}")
    return 0


def _read(path: Path) -> str:
    if not path.is_file():
        raise InvalidInput(f"{path} is no file: give a CSV file with the columns {','.join(HEADER)}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataFileError(str(path), None, "not UTF-8 text") from None


def _already_there(row: RuleRow, file_name: str, line: int) -> DataFileError:
    return DataFileError(file_name, row.line, f"benchmark {row.rule.benchmark} is already in {rules_path()} "
                                              f"(line {line}); edit that row instead")


def cmd_list(args: argparse.Namespace) -> int:
    for row in load_rule_rows():
        print(f"{row.rule.benchmark:<18} {row.rule.describe()}  [{row.rule.source}]")
    sys.stdout.flush()
    return 0
