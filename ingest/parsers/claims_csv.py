"""A user's published figures as CSV, one claim per row.

Header (names are case-insensitive; order free; `#` lines are comments):

    required   metric, value, unit, source_title or source_id, model, accelerator
    optional   n_devices, framework, framework_version, precision, seq_len, global_batch, micro_batch,
               strategy, workload, source_url, source_date, source_kind, evidence, locator, note, baseline

`metric` is a perfledger.vocabulary.Metric value (tokens_per_s_per_device, mfu, time_to_train_s ...). The value
is stored in the metric's unit; a known alternative unit is converted (ALTERNATIVE_UNITS: "%" -> fraction for
mfu, "ms" -> s, "h" -> s ...). An unknown metric or unit, or a value that is not a number, is a LineProblem
with the file's line number; the other rows are kept. evidence defaults to "reported". The source columns go
to ParseSummary.meta["sources"] (id -> title, url, date, kind) for the pipeline to store; the id is
source_id, else a slug of the title.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import to_float, to_int
from ingest.parsers.base import LogParser
from ingest.parsers.mlperf import resolve_accelerator_or_none
from perfledger.catalog import resolve_model
from perfledger.errors import ParseError, PerfledgerError
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps
from perfledger.vocabulary import Evidence, LogFormat, Metric, Precision, SourceKind, Workload

REQUIRED = ("metric", "value", "unit", "model", "accelerator")
OPTIONAL = (
    "source_title", "source_id", "n_devices", "framework", "framework_version", "precision", "seq_len",
    "global_batch", "micro_batch", "strategy", "workload", "source_url", "source_date", "source_kind", "evidence",
    "locator", "note", "baseline",
)
_FRACTION_METRICS = (Metric.MFU, Metric.HFU, Metric.SCALING_EFFICIENCY)
ALTERNATIVE_UNITS: dict[tuple[Metric, str], float] = {
    **{(m, "%"): 0.01 for m in _FRACTION_METRICS},
    **{(m, "percent"): 0.01 for m in _FRACTION_METRICS},
    (Metric.STEP_TIME_S, "ms"): 0.001,
    (Metric.TIME_TO_TRAIN_S, "min"): 60.0,
    (Metric.TIME_TO_TRAIN_S, "h"): 3600.0,
    (Metric.TIME_TO_TRAIN_S, "days"): 86400.0,
    (Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOPS"): 1.0,
    (Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOP/s"): 1.0,
    (Metric.TOKENS_PER_S_PER_DEVICE, "tokens/s/GPU"): 1.0,
    (Metric.RELATIVE_THROUGHPUT, "×"): 1.0,
}
_INT_FIELDS = ("n_devices", "seq_len", "global_batch", "micro_batch")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80]


def _optional_model(name: str) -> str | None:
    try:
        return resolve_model(name)
    except PerfledgerError:
        return None


class RowError(ValueError):
    pass


class ClaimsCsvParser(LogParser):
    format = LogFormat.CLAIMS_CSV

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        for line in head.split("\n"):
            if line.strip() and not line.startswith("#"):
                names = {c.strip().lower() for c in line.split(",")}
                return "metric" in names and "value" in names and bool({"source_title", "source_id"} & names)
        return False

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.header: list[str] | None = None
        self.results: list[ResultRecord] = []
        self.sources: dict[str, dict[str, str]] = {}

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        for offset, line in enumerate(lines):
            if not line.strip() or line.startswith("#"):
                continue
            lineno = first_lineno + offset
            try:
                cells = next(csv.reader([line.replace("\r", " ")]), [])
            except csv.Error as exc:
                self.problem(lineno, f"not a CSV row ({exc})")
                continue
            if self.header is None:
                self._set_header(cells, lineno)
                continue
            try:
                self.results.append(self._record(dict(zip(self.header, (c.strip() for c in cells), strict=False))))
            except RowError as exc:
                self.problem(lineno, str(exc))
        return empty_steps()

    def _set_header(self, cells: list[str], lineno: int) -> None:
        names = [c.strip().lower() for c in cells]
        missing = [n for n in REQUIRED if n not in names]
        if not {"source_title", "source_id"} & set(names):
            missing.append("source_title or source_id")
        if missing:
            raise ParseError(self.file_name, lineno, f"claims CSV header lacks {', '.join(missing)}")
        self.header = names

    def _record(self, row: dict[str, str]) -> ResultRecord:
        metric = self._metric(row.get("metric", ""))
        value = self._value(metric, row.get("value", ""), row.get("unit", ""))
        source_id = self._source(row)
        accelerator, model = row.get("accelerator") or None, row.get("model") or None
        return ResultRecord(
            metric=metric.value,
            value=value,
            unit=metric.unit,
            source_id=source_id,
            accelerator_id=resolve_accelerator_or_none(accelerator),
            accelerator_as_printed=accelerator,
            model_id=_optional_model(model) if model else None,
            model_as_printed=model,
            framework=row.get("framework") or None,
            framework_version=row.get("framework_version") or None,
            precision=self._choice(row, "precision", Precision),
            workload=self._choice(row, "workload", Workload),
            evidence=self._choice(row, "evidence", Evidence) or Evidence.REPORTED.value,
            strategy=row.get("strategy") or None,
            locator=row.get("locator") or None,
            note=row.get("note") or None,
            baseline=row.get("baseline") or None,
            **{name: self._int(row, name) for name in _INT_FIELDS},
        )

    @staticmethod
    def _metric(text: str) -> Metric:
        try:
            return Metric(text.strip())
        except ValueError:
            raise RowError(f"unknown metric {text!r} (known: {', '.join(m.value for m in Metric)})") from None

    @staticmethod
    def _value(metric: Metric, text: str, unit: str) -> float:
        value = to_float(text, thousands=True)
        if value is None:
            raise RowError(f"value {text!r} is not a finite number")
        if unit in ("", metric.unit):
            return value
        factor = ALTERNATIVE_UNITS.get((metric, unit))
        if factor is None:
            raise RowError(f"unit {unit!r} is not {metric.unit!r} (the unit of {metric.value}) nor a known alternative")
        return value * factor

    def _source(self, row: dict[str, str]) -> str:
        title, given = row.get("source_title", ""), row.get("source_id", "")
        source_id = given or _slug(title)
        if not source_id:
            raise RowError("no source_title or source_id")
        kind = self._choice(row, "source_kind", SourceKind) or SourceKind.UPLOAD.value
        if source_id not in self.sources:
            self.sources[source_id] = {"title": title or source_id, "url": row.get("source_url", ""),
                                       "date": row.get("source_date", ""), "kind": kind}
        return source_id

    @staticmethod
    def _choice(row: dict[str, str], name: str, vocabulary: Any) -> str | None:
        text = row.get(name, "").strip().lower()
        if not text:
            return None
        try:
            return str(vocabulary(text).value)
        except ValueError:
            raise RowError(f"{name} {text!r} is not one of {', '.join(v.value for v in vocabulary)}") from None

    @staticmethod
    def _int(row: dict[str, str], name: str) -> int | None:
        text = row.get(name, "").replace(",", "").strip()
        if not text:
            return None
        if (value := to_int(text)) is None:
            raise RowError(f"{name} {text!r} is not a whole number within 64 bits")
        return value

    def finish(self) -> ParseSummary:
        if self.header is None:
            raise ParseError(self.file_name, None, "empty claims CSV (no header)")
        if not self.results:
            raise ParseError(self.file_name, None, "no valid claim rows" + (f" ({self.problems[0]})" if self.problems else ""))
        return ParseSummary(
            format=self.format,
            config=RunConfig(),
            problems=tuple(self.problems),
            results=tuple(self.results),
            skipped_lines=self.skipped_lines,
            meta={"sources": self.sources},
        )


PARSER = ClaimsCsvParser
