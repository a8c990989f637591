"""W&B run history exports: the CSV of `run.history()` / `scan_history()` (`_step,_runtime,_timestamp,train/loss,...`,
often led by an unnamed pandas index column), the CSV a W&B chart exports (`"Step","<run> - train/loss",
"<run> - train/loss__MIN",...`) and JSONL (`wandb-history.jsonl` in a run's files, one JSON object per logged row).

The logged names are read through ingest/parsers/_metric_keys.py (Composer, HF Trainer, Megatron, torchtitan,
nanoGPT): printed throughput, TFLOP/s and MFU go to the reported_* columns, step time is a logged one or wall clock
between rows. A chart export of several runs keeps the first run's columns and says so. Each chunk becomes a frame
at once (Polars' CSV and NDJSON readers); a chunk they refuse is read line by line, and each line that does not fit
(a CSV row with the wrong number of fields, a JSONL line that is not an object) is skipped as FILE:LINE: reason.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import load_json
from ingest.parsers._metric_keys import MICRO_BATCH, Anchor, framework_of, is_known, steps_from_metrics
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

_HISTORY_MARKERS = ("_step", "_runtime", "_timestamp")
_CHART_STEP = "Step"
_CHART_SEPARATOR = " - "
_CHART_SUFFIXES = ("__MIN", "__MAX")


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.lstrip("\ufeff").strip()
    return ""


def _is_jsonl_row(line: str) -> bool:
    return line.startswith("{") and '"_step"' in line and ('"_runtime"' in line or '"_timestamp"' in line)


def _csv_fields(line: str) -> list[str] | None:
    """One CSV line's fields; None when the csv module refuses it (a stray carriage return, a huge field)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return None


def header_names(line: str) -> tuple[list[str], list[str]] | None:
    """A CSV header line -> (the names to read each column as, the chart's run names); None if not a W&B export.
    A history export keeps its names; a chart export's `<run> - key` columns become `key` for the first run, and
    its `Step` column `_step` (the other runs' columns and the __MIN/__MAX bands become "" and are not read)."""
    names = _csv_fields(line) or []
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


class WandbHistoryParser(LogParser):
    format = LogFormat.WANDB_HISTORY

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        first = _first_line(head)
        return _is_jsonl_row(first) or (not first.startswith("{") and header_names(first) is not None)

    @classmethod
    def claims(cls, line: str) -> bool:
        """JSONL rows each claim; a CSV's evidence is its header, the head as a whole (its rows name nothing)."""
        return _is_jsonl_row(line.strip())

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.mode: str | None = None  # "csv" or "jsonl", from the first line
        self.names: list[str] = []  # CSV: what each column is read as
        self.runs: list[str] = []
        self.anchor = Anchor()
        self.rows = 0
        self.seen: set[str] = set()
        self.micro_batch: int | None = None

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        if self.mode is None:
            lines, first_lineno = self._start(lines, first_lineno)
        if self.mode is None or not lines:
            return empty_steps()
        frame = self._csv(lines, first_lineno) if self.mode == "csv" else self._jsonl(lines, first_lineno)
        if frame.height == 0:
            return empty_steps()
        self.seen.update(frame.columns)
        if MICRO_BATCH in frame.columns and self.micro_batch is None:
            values = frame[MICRO_BATCH].cast(pl.Float64, strict=False).drop_nulls()
            self.micro_batch = int(values[0]) if len(values) and values[0] == int(values[0]) > 0 else None
        steps, self.anchor = steps_from_metrics(frame, self.anchor)
        self.rows += steps.height
        return steps

    def _start(self, lines: Sequence[str], first_lineno: int) -> tuple[Sequence[str], int]:
        for offset, line in enumerate(lines):
            text = line.lstrip("\ufeff").strip()
            if not text:
                continue
            if text.startswith("{"):
                self.mode = "jsonl"
                return lines[offset:], first_lineno + offset
            header = header_names(text)
            if header is None:
                raise ParseError(self.file_name, first_lineno + offset, "not a W&B history header (no `_step` column)")
            self.mode, (self.names, self.runs) = "csv", header
            return lines[offset + 1:], first_lineno + offset + 1
        return [], first_lineno

    # ------------------------------------------------------------------------------------------------ CSV

    def _csv(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        wanted = [i for i, n in enumerate(self.names) if n and is_known(n)]
        if not wanted:
            return pl.DataFrame()
        kept = lines if all(lines) else [line for line in lines if line.strip()]
        if not kept:
            return pl.DataFrame()
        text = "\n".join(kept)
        if '"' not in text and "\r" not in text and text.count(",") == (len(self.names) - 1) * len(kept):
            try:
                return self._read_csv(text.encode(), wanted)
            except pl.exceptions.PolarsError:  # read line by line, to name the line at fault
                pass
        return self._csv_by_line(lines, first_lineno, wanted)

    def _read_csv(self, data: bytes, wanted: list[int]) -> pl.DataFrame:
        """The chunk's wanted columns as numbers (as text when one is not a number: the step columns cast it)."""
        placeholders = [f"c{i}" for i in range(len(self.names))]
        numbers = {placeholders[i]: pl.Float64 for i in wanted}
        try:
            frame = pl.read_csv(data, has_header=False, new_columns=placeholders, columns=wanted,
                                schema_overrides=numbers, infer_schema_length=0, quote_char=None)
        except pl.exceptions.PolarsError:
            frame = pl.read_csv(data, has_header=False, new_columns=placeholders, columns=wanted,
                                infer_schema=False, quote_char=None)
        return frame.rename({placeholders[i]: self.names[i] for i in wanted})

    def _csv_by_line(self, lines: Sequence[str], first_lineno: int, wanted: list[int]) -> pl.DataFrame:
        kept: list[list[str]] = []
        for offset, line in enumerate(lines):
            if not line.strip():
                continue
            fields = _csv_fields(line)
            if fields is None:
                self.problem(first_lineno + offset, "not a CSV row (a stray carriage return or quote, or a field "
                                                    "too long); skipped")
                continue
            if len(fields) != len(self.names):
                self.problem(first_lineno + offset,
                             f"{len(fields)} fields where the header has {len(self.names)}; skipped")
                continue
            kept.append(fields)
        return pl.DataFrame({self.names[i]: [row[i] for row in kept] for i in wanted}, schema={
            self.names[i]: pl.String for i in wanted})

    # ---------------------------------------------------------------------------------------------- JSONL

    def _jsonl(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        kept = lines if all(lines) else [line for line in lines if line.strip()]
        if not kept:
            return pl.DataFrame()
        try:
            frame = pl.read_ndjson("\n".join(kept).encode(), infer_schema_length=None)
        except Exception:  # noqa: BLE001 - any refusal: read line by line to name the line at fault
            return self._jsonl_by_line(lines, first_lineno)
        keep = [c for c in frame.columns if is_known(c) and frame[c].dtype.is_numeric()]
        bad = [c for c in frame.columns if is_known(c) and not frame[c].dtype.is_numeric()]
        if bad:
            return self._jsonl_by_line(lines, first_lineno)
        return frame.select(keep)

    def _jsonl_by_line(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        columns: dict[str, list[float | None]] = {}
        count = 0
        for offset, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                obj = load_json(line)
            except json.JSONDecodeError as err:
                self.problem(first_lineno + offset, f"not a JSON object ({err.msg}); skipped")
                continue
            if not isinstance(obj, dict):
                self.problem(first_lineno + offset, "a JSON value that is not an object; skipped")
                continue
            for name, value in obj.items():
                if is_known(name):
                    columns.setdefault(name, [None] * count).append(_number(value))
            count += 1
            for values in columns.values():
                if len(values) < count:
                    values.append(None)
        return pl.DataFrame({n: pl.Series(n, v, dtype=pl.Float64) for n, v in columns.items()})

    # --------------------------------------------------------------------------------------------- finish

    def finish(self) -> ParseSummary:
        if self.rows == 0:
            raise ParseError(self.file_name, None, "no training rows (a loss, learning rate or speed figure with a "
                                                   "step) in the W&B history")
        framework = framework_of(self.seen)
        warnings = []
        if len(self.runs) > 1:
            warnings.append(f"the chart export holds {len(self.runs)} runs; only the first ({self.runs[0]}) is read")
        if not ({"iteration-time", "time_metrics/end_to_end(s)", "train/step_time", "step_time",
                 "train/step_time_ms", "throughput/batches_per_sec"} & self.seen):
            warnings.append("step time is wall clock between logged rows (`_runtime` over the steps between them): "
                            "evaluation and checkpoints in between count")
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework=framework or "wandb", micro_batch=self.micro_batch),
            problems=tuple(self.problems),
            warnings=tuple(warnings),
            skipped_lines=self.skipped_lines,
            meta={"export": f"wandb history {self.mode}", "names_read": sorted(self.seen)},
        )


def _number(value: Any) -> float | None:
    """A JSON number (NaN kept: a diverged loss) -> float; anything else (text, media, bools) -> None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


PARSER = WandbHistoryParser
