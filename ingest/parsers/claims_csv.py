"""A user's published figures as CSV, one claim per row.

Header (names are case-insensitive; order free; `#` lines are comments):

    required   metric, value, unit, source_title or source_id, model, accelerator
    optional   n_devices, framework, framework_version, precision, seq_len, global_batch, micro_batch,
               strategy, workload, source_url, source_date, source_kind, evidence, locator, note, baseline,
               grad_accum, tp, pp, dp, ep, cp, sparsity
    any other  kept under its printed name as a configuration attribute of the row (activation checkpointing,
               slice layout, dispatcher ...): stored as a JSON object in `attributes`, part of the row's
               configuration when the audit pairs figures, and of its claim key

Names are read with perfledger.vocabulary, as `calc` and the log parsers read them: a metric as printed ("MFU",
"tokens/s/GPU"), a unit as printed ("TFLOP/s per GPU", "% (BF16 MFU)": converted to the metric's unit), a
precision as printed ("amp_bf16", "BF16 + Float8 linears": a mixed recipe keeps its meaning in the note), an
evidence word ("published" -> reported). Every row the vocabulary cannot read is refused on its own, as
`FILE:LINE: reason`; all refusals are kept (a claims file is small) and counted by reason in
ParseSummary.meta["refused"]; the other rows are kept. The source columns go to meta["sources"]
(id -> title, url, date, kind) for the store; the id is source_id, else a slug of the title.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Sequence

import polars as pl

from ingest.parsers._common import to_float, to_int
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps
from perfledger.vocabulary import (
    LogFormat,
    Metric,
    SourceKind,
    Workload,
    read_evidence,
    read_metric,
    read_precision,
    unit_factor,
    unit_peak,
    unit_spellings,
)

REQUIRED = ("metric", "value", "unit", "model", "accelerator")
OPTIONAL = (
    "source_title", "source_id", "n_devices", "framework", "framework_version", "precision", "seq_len",
    "global_batch", "micro_batch", "strategy", "workload", "source_url", "source_date", "source_kind", "evidence",
    "locator", "note", "baseline",
)
INT_CONFIG = ("grad_accum", "tp", "pp", "dp", "ep", "cp")  # configuration columns of the result table, read as such
FLOAT_CONFIG = ("sparsity",)
KNOWN = frozenset((*REQUIRED, *OPTIONAL, *INT_CONFIG, *FLOAT_CONFIG))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80]


class RowError(ValueError):
    """A row refused; `reason` is the short kind counted in the summary, str() the full sentence."""

    def __init__(self, reason: str, sentence: str) -> None:
        super().__init__(sentence)
        self.reason = reason


class ClaimsCsvParser(LogParser):
    format = LogFormat.CLAIMS_CSV
    max_problems_kept = None  # every refusal listed: a claims file is small, and a refusal nobody sees is a silent drop

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
        self.lines: list[int] = []
        self.sources: dict[str, dict[str, str]] = {}
        self.refused: Counter[str] = Counter()

    def refuse(self, line: int, reason: str, sentence: str) -> None:
        self.refused[reason] += 1
        self.problem(line, sentence)

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        for offset, line in enumerate(lines):
            if not line.strip() or line.startswith("#"):
                continue
            lineno = first_lineno + offset
            try:
                cells = next(csv.reader([line.replace("\r", " ")]), [])
            except csv.Error as exc:
                self.refuse(lineno, "malformed CSV line", f"not a CSV row ({exc})")
                continue
            if self.header is None:
                self._set_header(cells, lineno)
                continue
            if len(cells) > len(self.header):
                self.refuse(lineno, "malformed CSV line",
                            f"{len(cells)} cells for a header of {len(self.header)} columns")
                continue
            try:
                record = self._record(dict(zip(self.header, (c.strip() for c in cells), strict=False)))
            except RowError as exc:
                self.refuse(lineno, exc.reason, str(exc))
                continue
            self.results.append(record)
            self.lines.append(lineno)
        return empty_steps()

    def _set_header(self, cells: list[str], lineno: int) -> None:
        names = [c.strip().lower() if c.strip().lower() in KNOWN else c.strip() for c in cells]
        missing = [n for n in REQUIRED if n not in names]
        if not {"source_title", "source_id"} & set(names):
            missing.append("source_title or source_id")
        if missing:
            raise ParseError(self.file_name, lineno, f"claims CSV header lacks {', '.join(missing)}")
        repeated = sorted({n for n in names if names.count(n) > 1 and n})
        if repeated:
            raise ParseError(self.file_name, lineno, f"claims CSV header names {', '.join(repeated)} twice")
        self.header = names

    def _record(self, row: dict[str, str]) -> ResultRecord:
        metric = self._metric(row.get("metric", ""))
        unit = row.get("unit", "")
        value = self._value(metric, row.get("value", ""), unit)
        source_id = self._source(row)
        notes = [row.get("note", ""), printed_metric(row.get("metric", ""), metric)]
        precision = self._precision(row.get("precision", ""), notes)
        if metric in (Metric.MFU, Metric.HFU) and (peak := unit_peak(unit)) is not None:
            notes.append(f"{metric.value} against the {peak.value} peak (unit as printed: {unit})")
        return ResultRecord(
            metric=metric.value,
            value=value,
            unit=metric.unit,
            source_id=source_id,
            accelerator_as_printed=row.get("accelerator") or None,
            model_as_printed=row.get("model") or None,
            framework=row.get("framework") or None,
            framework_version=row.get("framework_version") or None,
            precision=precision,
            workload=self._workload(row.get("workload", "")),
            evidence=self._evidence(row.get("evidence", "")),
            strategy=row.get("strategy") or None,
            locator=row.get("locator") or None,
            note="; ".join(n for n in notes if n) or None,
            baseline=row.get("baseline") or None,
            n_devices=self._int(row, "n_devices"),
            seq_len=self._int(row, "seq_len"),
            global_batch=self._int(row, "global_batch"),
            micro_batch=self._int(row, "micro_batch"),
            grad_accum=self._int(row, "grad_accum"), tp=self._int(row, "tp"), pp=self._int(row, "pp"),
            dp=self._int(row, "dp"), ep=self._int(row, "ep"), cp=self._int(row, "cp"),
            sparsity=self._float(row, "sparsity"),
            precision_as_printed=row.get("precision") or None,
            attributes=attributes_json(row),
        )

    @staticmethod
    def _metric(text: str) -> Metric:
        found = read_metric(text)
        if found is None:
            raise RowError("unknown metric", f"unknown metric {text!r} (known: {', '.join(m.value for m in Metric)}); "
                                             f"to add a spelling, append 'METRIC,{text}' to data/metric_names.csv")
        return found

    @staticmethod
    def _value(metric: Metric, text: str, unit: str) -> float:
        value = to_float(text, thousands=True)
        if value is None:
            raise RowError("not a number", f"value {text!r} is not a finite number")
        factor = unit_factor(metric, unit)
        if factor is None:
            known = unit_spellings(metric)
            shown = ", ".join(known[:12]) + (f" and {len(known) - 12} more" if len(known) > 12 else "")
            raise RowError("unknown unit", f"unit {unit!r} is not {metric.unit!r} (the unit of {metric.value}) "
                                           f"nor a known spelling of it (known: {shown}); to add one, append "
                                           f"'{metric.value},{unit},FACTOR' to data/units.csv")
        return value * factor

    @staticmethod
    def _precision(text: str, notes: list[str]) -> str | None:
        if not text.strip():
            return None
        reading = read_precision(text)
        if reading is None:
            raise RowError("unknown precision", f"precision {text!r} is not a precision perfledger knows")
        if reading.meaning:
            notes.append(f"precision as printed: {text} ({reading.meaning})")
        return reading.precision.value

    @staticmethod
    def _evidence(text: str) -> str:
        if not text.strip():
            return "reported"
        found = read_evidence(text)
        if found is None:
            raise RowError("unknown evidence", f"evidence {text!r} is not reported, derived, measured or "
                                               "extrapolated (nor a word for one)")
        return found.value

    @staticmethod
    def _workload(text: str) -> str | None:
        key = text.strip().lower()
        if not key:
            return None
        try:
            return Workload(key).value
        except ValueError:
            raise RowError("unknown workload", f"workload {text!r} is not one of "
                                               f"{', '.join(w.value for w in Workload)}") from None

    def _source(self, row: dict[str, str]) -> str:
        title, given = row.get("source_title", ""), row.get("source_id", "")
        source_id = given or _slug(title)
        if not source_id:
            raise RowError("no source", "no source_title or source_id")
        kind_text = row.get("source_kind", "").strip().lower()
        if kind_text and kind_text not in {k.value for k in SourceKind}:
            raise RowError("unknown source kind", f"source_kind {kind_text!r} is not one of "
                                                  f"{', '.join(k.value for k in SourceKind)}")
        if source_id not in self.sources:
            self.sources[source_id] = {"title": title or source_id, "url": row.get("source_url", ""),
                                       "date": row.get("source_date", ""), "kind": kind_text}
        return source_id

    @staticmethod
    def _int(row: dict[str, str], name: str) -> int | None:
        text = row.get(name, "").replace(",", "").strip()
        if not text:
            return None
        if (value := to_int(text)) is None:
            raise RowError("not a number", f"{name} {text!r} is not a whole number within 64 bits")
        return value

    @staticmethod
    def _float(row: dict[str, str], name: str) -> float | None:
        text = row.get(name, "").strip()
        if not text:
            return None
        if (value := to_float(text, thousands=True)) is None:
            raise RowError("not a number", f"{name} {text!r} is not a finite number")
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
            meta={"sources": self.sources, "refused": dict(self.refused), "lines": self.lines},
        )


def attributes_json(row: dict[str, str]) -> str | None:
    """The row's further columns (those not in KNOWN) that hold a value, as a JSON object with sorted keys under
    their printed names; None when there are none.

    >>> attributes_json({"metric": "MFU", "Activation checkpointing": "selective op", "Hardware": ""})
    '{"Activation checkpointing": "selective op"}'
    """
    extra = {k: v for k, v in row.items() if k not in KNOWN and k and v}
    return json.dumps(extra, sort_keys=True, ensure_ascii=False) if extra else None


PARSER = ClaimsCsvParser


def printed_metric(text: str, metric: Metric) -> str:
    """The metric name as printed, kept in the note when it says more than the metric's own name ("Time to train 1T
    tokens in days": the audit reads its token count there); "" when it is the metric's own name.

    >>> printed_metric("Time to train 1T tokens in days", Metric.TIME_TO_TRAIN_S), printed_metric("mfu", Metric.MFU)
    ('metric as printed: Time to train 1T tokens in days', '')
    """
    same = "".join(c for c in text.lower() if c.isalnum()) == "".join(c for c in metric.value if c.isalnum())
    return "" if same or not text.strip() else f"metric as printed: {text}"
