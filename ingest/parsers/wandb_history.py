"""W&B run history exports: the CSV of `run.history()` / `scan_history()` (`_step,_runtime,_timestamp,train/loss,...`,
often led by an unnamed pandas index column), the CSV a W&B chart exports (`"Step","<run> - train/loss",
"<run> - train/loss__MIN",...`) and JSONL (`wandb-history.jsonl` in a run's files, one JSON object per logged row).

A metrics file (ingest/parsers/metrics_file.py) whose header or rows carry W&B's own `_step` and `_runtime` /
`_timestamp`: read by the same reader through the same key vocabulary; only the chart export's header is W&B's own
(the first run's `<run> - key` columns are read as `key`, the other runs' and the __MIN/__MAX bands are not read).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ingest.parsers.metrics_file import MetricsFileParser, csv_fields, first_line
from perfledger.vocabulary import LogFormat

_HISTORY_MARKERS = ("_step", "_runtime", "_timestamp")
_CHART_STEP = "Step"
_CHART_SEPARATOR = " - "
_CHART_SUFFIXES = ("__MIN", "__MAX")


def _is_jsonl_row(line: str) -> bool:
    return line.startswith("{") and '"_step"' in line and ('"_runtime"' in line or '"_timestamp"' in line)


def header_names(line: str) -> tuple[list[str], list[str]] | None:
    """A CSV header line -> (the names to read each column as, the chart's run names); None if not a W&B export.
    A history export keeps its names; a chart export's `<run> - key` columns become `key` for the first run, and
    its `Step` column `_step` (the other runs' columns and the __MIN/__MAX bands become "" and are not read)."""
    names = csv_fields(line) or []
    if "_step" in names and any(m in names for m in _HISTORY_MARKERS[1:]):
        return names, []
    if not names or names[0] != _CHART_STEP or not any(_CHART_SEPARATOR in n for n in names[1:]):
        return None
    runs: list[str] = []
    keys = ["_step"]
    for name in names[1:]:
        run, _, key = name.rpartition(_CHART_SEPARATOR)
        if run and run not in runs:
            runs.append(run)
        keys.append(key if run and run == runs[0] and not key.endswith(_CHART_SUFFIXES) else "")
    return keys, runs


class WandbHistoryParser(MetricsFileParser):
    format: ClassVar[LogFormat] = LogFormat.WANDB_HISTORY
    fallback: ClassVar[bool] = False
    kind_name: ClassVar[str] = "W&B history"

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        first = first_line(head)
        return _is_jsonl_row(first) or (not first.startswith("{") and header_names(first) is not None)

    @classmethod
    def claims(cls, line: str) -> bool:
        """JSONL rows each claim; a CSV's evidence is its header, the head as a whole (its rows name nothing)."""
        return _is_jsonl_row(line.strip())

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.runs: list[str] = []

    def header(self, line: str) -> tuple[str, list[str]] | None:
        found = header_names(line)
        if found is None:
            return None
        names, self.runs = found
        return ",", names

    def default_framework(self) -> str | None:
        return "wandb"

    def meta(self) -> dict[str, Any]:
        return {"export": f"wandb history {self.mode}"} | self.records.meta()

    def warnings(self) -> list[str]:
        out = []
        if len(self.runs) > 1:
            out.append(f"the chart export holds {len(self.runs)} runs; only the first ({self.runs[0]}) is read")
        return out + super().warnings()


PARSER = WandbHistoryParser
