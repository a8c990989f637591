"""MLCommons' scoring rule per MLPerf Training benchmark, read from `mlperf_scoring.csv` in the data folder:

    benchmark,problem,runs,dropped_each_end,max_non_converged,source,locator

`benchmark` is the result files' `submission_benchmark` value; `runs` the number of runs a result needs;
`dropped_each_end` how many of the fastest and of the slowest runs the olympic mean drops; `source` and `locator`
where MLCommons states it. A new benchmark is a new row: `python -m perfledger catalog rules add FILE.csv` checks
each row of a file with this header and appends them (`perfledger.calc.repeats` does the rest); `catalog rules list`
prints the table.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfledger.calc.repeats import ScoringRule
from perfledger.data_files import append_rows
from perfledger.errors import DataFileError
from perfledger.settings import data_dir as settings_data_dir

FILE_NAME = "mlperf_scoring.csv"
HEADER = ("benchmark", "problem", "runs", "dropped_each_end", "max_non_converged", "source", "locator")
_BENCHMARK = re.compile(r"[a-z0-9][a-z0-9_.-]*")  # as MLPerf's result files spell submission_benchmark


@dataclass(frozen=True, slots=True)
class RuleRow:
    """One checked row of a rules file: the rule, with the line it was read from and its fields as written."""

    line: int
    rule: ScoringRule
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CheckedRules:
    """A rules file read row by row: the rows that are right, and one error per row that is not."""

    rows: tuple[RuleRow, ...]
    refused: tuple[DataFileError, ...]


def rules_path(data_dir: Path | None = None) -> Path:
    return (data_dir or settings_data_dir()) / FILE_NAME


def load_rules(data_dir: Path | None = None) -> dict[str, ScoringRule]:
    """Every benchmark's rule, by benchmark name."""
    return {row.rule.benchmark: row.rule for row in load_rule_rows(data_dir)}


def load_rule_rows(data_dir: Path | None = None) -> tuple[RuleRow, ...]:
    path = rules_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise DataFileError(str(path), None, f"the MLPerf scoring rules cannot be read ({why})") from None
    checked = check_rules(text, str(path))
    if checked.refused:
        raise checked.refused[0]
    return checked.rows


def parse_rules(text: str, file_name: str) -> list[ScoringRule]:
    """The rules of a file; DataFileError naming the first line at fault."""
    checked = check_rules(text, file_name)
    if checked.refused:
        raise checked.refused[0]
    return [row.rule for row in checked.rows]


def check_rules(text: str, file_name: str) -> CheckedRules:
    """Every row checked on its own; a benchmark named twice is refused at its second row. A wrong header refuses
    the file (DataFileError at line 1)."""
    reader = csv.reader(io.StringIO(text))
    if tuple(h.strip() for h in next(reader, ())) != HEADER:
        raise DataFileError(file_name, 1, f"the header must be {','.join(HEADER)}")
    rows: list[RuleRow] = []
    refused: list[DataFileError] = []
    seen: dict[str, int] = {}
    for lineno, fields in enumerate(reader, start=2):
        if not any(f.strip() for f in fields):
            continue
        try:
            row = check_row(tuple(f.strip() for f in fields), file_name, lineno)
            if (first := seen.setdefault(row.rule.benchmark, lineno)) != lineno:
                raise DataFileError(file_name, lineno, f"benchmark {row.rule.benchmark} is already on line {first}")
            rows.append(row)
        except DataFileError as exc:
            refused.append(exc)
    return CheckedRules(tuple(rows), tuple(refused))


def check_row(fields: Sequence[str], file_name: str, lineno: int) -> RuleRow:
    """One row, or DataFileError saying what is wrong with it."""
    def bad(reason: str) -> DataFileError:
        return DataFileError(file_name, lineno, reason)

    if len(fields) != len(HEADER):
        raise bad(f"{len(fields)} fields where the header has {len(HEADER)}")
    row = dict(zip(HEADER, fields, strict=True))
    if not _BENCHMARK.fullmatch(row["benchmark"]):
        raise bad(f"benchmark {row['benchmark']!r} must be written as the result files' submission_benchmark "
                  "(lower-case letters, digits, _ . -)")
    try:
        runs, dropped, failed = int(row["runs"]), int(row["dropped_each_end"]), int(row["max_non_converged"])
    except ValueError:
        raise bad("runs, dropped_each_end and max_non_converged must be whole numbers") from None
    if dropped < 0 or failed < 0:
        raise bad("dropped_each_end and max_non_converged cannot be negative")
    if runs <= 2 * dropped:
        raise bad(f"{runs} runs with {dropped} dropped at each end leave none to average")
    if failed > dropped:
        raise bad(f"{failed} non-converging runs allowed, but only {dropped} slowest are dropped")
    if not row["source"]:
        raise bad("source is empty: name where MLCommons states the rule")
    rule = ScoringRule(benchmark=row["benchmark"], runs=runs, dropped_each_end=dropped, max_non_converged=failed,
                       source=f"{row['source']}, {row['locator']}")
    return RuleRow(lineno, rule, tuple(fields))


def add_rules(rows: Sequence[RuleRow], data_dir: Path | None = None) -> Path:
    """Append rows to the rules file (after checking that it still reads); returns its path."""
    path = rules_path(data_dir)
    load_rule_rows(data_dir)
    return append_rows(path, (row.fields for row in rows))


def rule_for(benchmark: str | None, data_dir: Path | None = None) -> ScoringRule | None:
    return load_rules(data_dir).get(benchmark or "")
