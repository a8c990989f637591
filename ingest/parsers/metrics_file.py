"""Record streams of any framework: JSON lines, CSV / TSV with a header row, or a JSON document, read through the
key vocabulary (data/metric_keys.csv) by ingest/parsers/_records.py.

LLaMA-Factory `trainer_log.jsonl`, ms-swift `logging.jsonl`, MaxText's `metrics_file`, PyTorch Lightning's
`CSVLogger` `metrics.csv`, NeMo Automodel's `training.jsonl`, verl's per-step CSV, NeMo's DLLogger lines (`DLLL
{...}`: a framework row's line prefix, its `data` object's names read as the record's), W&B run history (CSV
from `run.history()`, a chart's "Export CSV" of which the first run is read, `wandb-history.jsonl`), HF
`all_results.json` (one end-of-run record) and whatever else logs one record of named values per step: a file is
this format when its first record names a step (or a step time) and a training figure the vocabulary knows. A
framework the vocabulary does not know yet becomes readable by adding its key spellings (and, when it needs one,
its line prefix in data/frameworks.csv) as data rows (`python -m perfledger keys add`), not code.

Each chunk becomes a frame at once (Polars' CSV and NDJSON readers); a chunk they refuse is read line by line, and a
line that does not fit (a CSV row with the wrong number of fields, a JSON line that is not an object) is skipped as
FILE:LINE: reason. Text values stay text (a duration "0:02:12", a "5/1000" step), for the vocabulary's units to read.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import polars as pl

from ingest.parsers._common import load_json
from ingest.parsers._record_text import (
    MAX_COLUMNS_DOCUMENT_CHARS,
    chart_names,
    csv_fields,
    document_names,
    first_line,
    first_lines,
    flat,
    flat_names,
    json_object,
    prefixes_of,
    record_lists,
    record_text,
    unprefixed,
)
from ingest.parsers._records import LINE, StepRecords
from ingest.parsers.base import LogParser, epoch_date
from perfledger.errors import NoKnownNames, ParseError
from perfledger.metric_keys import load_vocabulary
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

DELIMITERS = (",", "\t")
# A JSON line with more brackets than this is read by Python's json (which refuses deep nesting with a sentence)
# rather than by Polars' NDJSON reader, which crashed the process on a line nested 50,000 deep.
MAX_FAST_BRACKETS = 256
_SNIFF_KEYS = ("step", "step_time_s", "elapsed_s", "wall_time")


def looks_like_records(names: Sequence[str]) -> bool:
    """Whether a record's names are a training step's as the vocabulary knows them: a step (or a clock) and a
    training figure."""
    mapping = load_vocabulary().mapping(names)
    columns = set(mapping.by_column)
    return bool(columns & set(_SNIFF_KEYS)) and bool(columns & {"loss", "lr", "grad_norm", "step_time_s",
                                                                "reported_tflops_per_device", "reported_mfu",
                                                                "reported_tokens_per_s_per_device"})


def _document_looks_like_steps(names: Sequence[str]) -> bool:
    """A document of per-step arrays or records: no step column needed (an array's index is the step), a loss or a
    step time is."""
    return bool(set(load_vocabulary().mapping(names).by_column) & {"loss", "step_time_s"})


def _header(line: str) -> tuple[str, list[str]] | None:
    """(delimiter, names) of a CSV / TSV header row whose names the vocabulary reads as records."""
    for delimiter in DELIMITERS:
        names = chart_names(csv_fields(line, delimiter) or [])[0]
        if len(names) >= 2 and looks_like_records(names):
            return delimiter, names
    return None


def _numbered(frame: pl.DataFrame, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
    """The records with their lines (LINE), when there is one record for each line that is not blank (a line
    skipped as unreadable leaves them unnumbered)."""
    numbers = [first_lineno + i for i, line in enumerate(lines) if line.strip()]
    if len(numbers) != frame.height:
        return frame
    return frame.with_columns(pl.Series(LINE, numbers, dtype=pl.Int64))


class MetricsFileParser(LogParser):
    format: ClassVar[LogFormat] = LogFormat.METRICS
    fallback: ClassVar[bool] = True  # generic: any format of its own that accepts the file reads it instead
    kind_name: ClassVar[str] = "metrics file"

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        _, prefixes = prefixes_of(list(first_lines(head, 20)))
        if prefixes:
            head = "\n".join(unprefixed(line, prefixes) for line in first_lines(head, 20))
        line = first_line(head)
        if json_object(line) is None and line.startswith("{"):
            return _document_looks_like_steps(document_names(head))
        if _header(line) is not None:
            return True
        lines = list(first_lines(head, 20))
        objects = [obj for text in lines if (obj := json_object(text)) is not None]
        if 2 * len(objects) < len(lines):  # a JSON line or two in console output: not a record stream
            return False
        # the first record names a step and a figure; in a framework's own stream (a recognised prefix) one of the
        # first three may (DLLogger opens with its PARAMETER record)
        return any(looks_like_records(flat_names(obj)) for obj in objects[:3 if prefixes else 1])

    @classmethod
    def claims(cls, line: str) -> bool:
        """JSON records each claim; a CSV's evidence is its header, the head as a whole (its rows name nothing)."""
        line = unprefixed(line.strip(), prefixes_of([line])[1])
        obj = json_object(line)
        return obj is not None and looks_like_records(flat_names(obj))

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.mode: str | None = None  # "csv" or "jsonl", from the first line
        self.delimiter = ","
        self.names: list[str] = []  # CSV: what each column is read as
        self.records = StepRecords()
        self.document: list[str] = []  # mode "columns": the whole JSON document, parsed in finish()
        self.document_chars = 0
        self.tail = empty_steps()
        self.prefixes: tuple[re.Pattern[str], ...] | None = None  # the recognised frameworks' line prefixes
        self.runs: list[str] = []  # a W&B chart export's runs

    def header(self, line: str) -> tuple[str, list[str]] | None:
        """(delimiter, the names to read each column as) of a header row; None if this format refuses it."""
        found = _header(line)
        if found is not None:
            self.runs = chart_names(csv_fields(line, found[0]) or [])[1]
        return found

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        if self.prefixes is None:
            found, self.prefixes = prefixes_of(list(itertools.islice((x for x in lines if x.strip()), 20)))
            self.records.frameworks = tuple(found)
        if self.prefixes:
            lines = [unprefixed(line, self.prefixes) for line in lines]
        if self.mode is None:
            lines, first_lineno = self._start(lines, first_lineno)
        if self.mode is None or not lines:
            return empty_steps()
        if self.mode == "columns":
            self._keep_document(lines)
            return empty_steps()
        frame = self._csv(lines, first_lineno) if self.mode == "csv" else self._jsonl(lines, first_lineno)
        if frame.height == 0:
            return empty_steps()
        steps = self.records.steps(_numbered(frame, lines, first_lineno))
        self.saw_time(epoch_date(self.records.first_wall_time))
        return steps

    def _start(self, lines: Sequence[str], first_lineno: int) -> tuple[Sequence[str], int]:
        for offset, line in enumerate(lines):
            text = line.lstrip("\ufeff").strip()
            if not text:
                continue
            if text.startswith("{"):
                self.mode = "jsonl" if json_object(text) is not None else "columns"
                return lines[offset:], first_lineno + offset
            header = self.header(text)
            if header is None and any(json_object(line.strip()) for line in lines[offset + 1:offset + 20]):
                self.problem(first_lineno + offset, f"not a record of the {self.kind_name}; skipped")
                continue  # a stray line before the first JSON record
            if header is None:
                raise ParseError(self.file_name, first_lineno + offset,
                                 f"not a {self.kind_name} header (no step and training columns it knows)")
            self.mode, (self.delimiter, self.names) = "csv", header
            return lines[offset + 1:], first_lineno + offset + 1
        return [], first_lineno

    # ------------------------------------------------------------------------------------------------ CSV

    def _csv(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        wanted = [i for i, n in enumerate(self.names) if n and self.records.known(n)]
        if not wanted:
            return pl.DataFrame()
        kept = lines if all(lines) else [line for line in lines if line.strip()]
        if not kept:
            return pl.DataFrame()
        text = "\n".join(kept)
        d = self.delimiter
        if '"' not in text and "\r" not in text and text.count(d) == (len(self.names) - 1) * len(kept):
            try:
                return self._read_csv(text.encode(), wanted)
            except pl.exceptions.PolarsError:  # read line by line, to name the line at fault
                pass
        return self._csv_by_line(lines, first_lineno, wanted)

    def _read_csv(self, data: bytes, wanted: list[int]) -> pl.DataFrame:
        """The chunk's wanted columns as numbers (as text when one is not a number: the step columns cast it)."""
        placeholders = [f"c{i}" for i in range(len(self.names))]
        numbers = {placeholders[i]: pl.Float64 for i in wanted}
        options: dict[str, Any] = {"has_header": False, "new_columns": placeholders, "columns": wanted,
                                   "quote_char": None, "separator": self.delimiter}
        try:
            frame = pl.read_csv(data, schema_overrides=numbers, infer_schema_length=0, **options)
        except pl.exceptions.PolarsError:
            frame = pl.read_csv(data, infer_schema=False, **options)
        return frame.rename({placeholders[i]: self.names[i] for i in wanted})

    def _csv_by_line(self, lines: Sequence[str], first_lineno: int, wanted: list[int]) -> pl.DataFrame:
        kept: list[list[str]] = []
        for offset, line in enumerate(lines):
            if not line.strip():
                continue
            fields = csv_fields(line, self.delimiter)
            if fields is None:
                self.problem(first_lineno + offset, "not a CSV row (a stray carriage return or quote, or a field "
                                                    "too long); skipped")
                continue
            if len(fields) != len(self.names):
                self.problem(first_lineno + offset,
                             f"{len(fields)} fields where the header has {len(self.names)}; skipped")
                continue
            kept.append(fields)
        return pl.DataFrame({self.names[i]: [row[i] or None for row in kept] for i in wanted}, schema={
            self.names[i]: pl.String for i in wanted})

    # ---------------------------------------------------------------------------------------------- JSONL

    def _jsonl(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        kept = lines if all(lines) else [line for line in lines if line.strip()]
        if not kept:
            return pl.DataFrame()
        if max(line.count("{") + line.count("[") for line in kept) > MAX_FAST_BRACKETS:
            return self._jsonl_by_line(lines, first_lineno)  # Polars' reader overflows its stack on deep nesting
        try:
            frame = pl.read_ndjson("\n".join(kept).encode(), infer_schema_length=None)
        except Exception:  # noqa: BLE001 - any refusal: read line by line to name the line at fault
            return self._jsonl_by_line(lines, first_lineno)
        nested = [c for c in frame.columns if isinstance(frame[c].dtype, pl.Struct)]
        if nested:
            try:
                frame = frame.unnest(nested)
            except pl.exceptions.PolarsError:  # a nested name that is also a top-level name: line by line
                return self._jsonl_by_line(lines, first_lineno)
        known = [c for c in frame.columns if self.records.known(c)]
        if any(not (frame[c].dtype.is_numeric() or frame[c].dtype == pl.String) for c in known):
            return self._jsonl_by_line(lines, first_lineno)
        return frame.select(known)

    def _jsonl_by_line(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        columns: dict[str, list[str | None]] = {}
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
            for name, value in flat(obj).items():
                if self.records.known(name):
                    columns.setdefault(name, [None] * count).append(record_text(value))
            count += 1
            for values in columns.values():
                if len(values) < count:
                    values.append(None)
        return pl.DataFrame({n: pl.Series(n, v, dtype=pl.String) for n, v in columns.items()})

    # ------------------------------------------------------------------------------------------- columns

    def _keep_document(self, lines: Sequence[str]) -> None:
        self.document_chars += sum(len(line) + 1 for line in lines)
        if self.document_chars > MAX_COLUMNS_DOCUMENT_CHARS:
            raise ParseError(self.file_name, None, f"a JSON document of per-step arrays over "
                                                   f"{MAX_COLUMNS_DOCUMENT_CHARS // 2**20} MiB is not read")
        self.document.extend(lines)

    def _columns(self) -> pl.DataFrame:
        """The document's records: its longest list of objects with names the vocabulary knows, else its arrays of
        numbers, one record per index (the step is then the index + 1)."""
        try:
            doc = load_json("\n".join(self.document))
        except json.JSONDecodeError as err:
            raise ParseError(self.file_name, err.lineno, f"not valid JSON ({err.msg})") from None
        if not isinstance(doc, dict):
            raise ParseError(self.file_name, 1, "the JSON document is not an object")
        known = self.records.known
        lists = sorted(record_lists(doc, known), key=len, reverse=True)
        if lists:
            names = list(dict.fromkeys(k for record in lists[0] for k in record if known(k)))
            return pl.DataFrame({k: [record_text(r.get(k)) for r in lists[0]] for k in names},
                                schema=dict.fromkeys(names, pl.String))
        arrays = {k: v for k, v in doc.items() if isinstance(v, list) and known(k)}
        if not arrays:  # one record: a flat object of the run's totals (HF all_results.json)
            flat = {k: v for k, v in doc.items() if known(k) and not isinstance(v, dict | list)}
            return pl.DataFrame({k: [record_text(v)] for k, v in flat.items()}, schema=dict.fromkeys(flat, pl.String))
        length = max((len(v) for v in arrays.values()), default=0)
        return pl.DataFrame({k: [record_text(x) for x in v] + [None] * (length - len(v)) for k, v in arrays.items()},
                            schema=dict.fromkeys(arrays, pl.String))

    def final_steps(self) -> pl.DataFrame:
        return self.tail

    # --------------------------------------------------------------------------------------------- finish

    def no_rows_reason(self) -> str:
        return (f"no training rows (records with a step and a loss, learning rate or speed figure) in the {self.kind_name}"
                f"{self._names_hint()}")

    def _names_hint(self) -> str:
        return "" if self.records.names_seen else (
            "; none of its names is in the key vocabulary: add them with `python -m perfledger keys add`")

    def record_notes(self) -> list[str]:
        return [n for n in (self.records.step_time_note(), self.records.set_aside_note(), self.records.nan_note())
                if n]

    def default_framework(self) -> str | None:
        return None

    def meta(self) -> dict[str, Any]:
        return {"export": f"{self.kind_name} {self.mode}"} | self.records.meta()

    def finish(self) -> ParseSummary:
        records = self.records
        if self.mode == "columns":
            self.tail = records.steps(self._columns())
            self.document.clear()
        results = records.summary_results({}, locator="the end-of-run summary record")
        if records.rows == 0 and not results:
            raise NoKnownNames(self.file_name, None, self.no_rows_reason())
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework=records.framework or self.default_framework(), micro_batch=records.micro_batch),
            problems=tuple(self.problems),
            warnings=tuple(self.warnings()),
            results=results,
            skipped_lines=self.skipped_lines,
            meta=self.meta(),
        )

    def warnings(self) -> list[str]:
        out = self.record_notes()
        if len(self.runs) > 1:
            out.append(f"the chart export holds {len(self.runs)} runs; only the first ({self.runs[0]}) is read")
        if self.records.numbered_by_row:
            out.append("the records carry no step number: steps are numbered in the order of the records")
        return out


PARSER = MetricsFileParser
