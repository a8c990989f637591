"""MLCommons' scoring rule per MLPerf Training benchmark, read from `mlperf_scoring.csv` in the data folder:

    benchmark,problem,runs,dropped_each_end,max_non_converged,source,locator

`benchmark` is the result files' `submission_benchmark` value; `runs` the number of runs a result needs;
`dropped_each_end` how many of the fastest and of the slowest runs the olympic mean drops; `source` and `locator`
where MLCommons states it. A new benchmark is a new row (edit the file; `perfledger.calc.repeats` does the rest).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from perfledger.calc.repeats import ScoringRule
from perfledger.errors import DataFileError
from perfledger.settings import load_settings

FILE_NAME = "mlperf_scoring.csv"
HEADER = ("benchmark", "problem", "runs", "dropped_each_end", "max_non_converged", "source", "locator")


def rules_path(data_dir: Path | None = None) -> Path:
    return (data_dir or load_settings().data_dir) / FILE_NAME


def load_rules(data_dir: Path | None = None) -> dict[str, ScoringRule]:
    """Every benchmark's rule, by benchmark name."""
    path = rules_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(str(path), None, f"the MLPerf scoring rules cannot be read ({exc.strerror})") from None
    return {rule.benchmark: rule for rule in parse_rules(text, str(path))}


def parse_rules(text: str, file_name: str) -> list[ScoringRule]:
    reader = csv.reader(io.StringIO(text))
    if tuple(next(reader, ())) != HEADER:
        raise DataFileError(file_name, 1, f"the header must be {','.join(HEADER)}")
    return [_rule(dict(zip(HEADER, fields, strict=False)), file_name, lineno)
            for lineno, fields in enumerate(reader, start=2) if fields]


def _rule(row: dict[str, str], file_name: str, lineno: int) -> ScoringRule:
    try:
        runs, dropped, failed = int(row["runs"]), int(row["dropped_each_end"]), int(row["max_non_converged"])
    except (KeyError, ValueError):
        raise DataFileError(file_name, lineno, "runs, dropped_each_end and max_non_converged must be whole numbers") \
            from None
    if runs <= 2 * dropped or dropped < 0 or failed < 0:
        raise DataFileError(file_name, lineno, f"{runs} runs with {dropped} dropped at each end leave none to average")
    return ScoringRule(benchmark=row["benchmark"].strip(), runs=runs, dropped_each_end=dropped,
                       max_non_converged=failed, source=f"{row.get('source', '')}, {row.get('locator', '')}")


def rule_for(benchmark: str | None, data_dir: Path | None = None) -> ScoringRule | None:
    return load_rules(data_dir).get(benchmark or "")
