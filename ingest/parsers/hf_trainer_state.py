"""Hugging Face Trainer `trainer_state.json`: `log_history` entries (loss, learning_rate, grad_norm, epoch,
step), eval/predict entries, and the final summary entry (train_runtime, train_samples_per_second,
train_steps_per_second, total_flos).

log_history carries no timestamps, so steps have no step_time_s (a warning says so); the run's throughput
comes from the Trainer's own summary: samples/s over the whole run (evidence measured). Whole-file JSON is
buffered, up to MAX_JSON_BYTES; JsonFileParser is shared with the other whole-file JSON formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import json_number, load_json
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps, steps_frame
from perfledger.vocabulary import Evidence, LogFormat, Metric

MAX_JSON_BYTES = 256 * 1024 * 1024


class JsonFileParser(LogParser):
    """Buffers a whole-file JSON document (at most MAX_JSON_BYTES) and parses it as soon as it is complete.

    The contract hands steps back from feed(), so the document is parsed in the feed() that completes it
    (brace count back to zero at the end of a chunk) and its steps are returned there. A document that only
    parses in finish() (braces inside strings fooled the count) keeps its steps in final_steps().
    """

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._parts: list[str] = []
        self._size = 0
        self._depth = 0
        self._doc: Any = None
        self._parsed = False
        self._late_steps = empty_steps()

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        if self._parsed:
            if any(line.strip() for line in lines):
                self.problem(first_lineno, "text after the end of the JSON document; ignored")
            return empty_steps()
        chunk = "\n".join(lines)
        self._size += len(chunk) + 1
        if self._size > MAX_JSON_BYTES:
            raise ParseError(self.file_name, first_lineno, f"JSON file larger than {MAX_JSON_BYTES // 2**20} MB")
        self._parts.append(chunk)
        self._depth += chunk.count("{") + chunk.count("[") - chunk.count("}") - chunk.count("]")
        if self._depth != 0 or not chunk.rstrip().endswith(("}", "]")):
            return empty_steps()
        try:
            self._doc = load_json("\n".join(self._parts))
        except (ValueError, RecursionError):
            return empty_steps()  # finish() parses again and says why
        self._parsed, self._parts = True, []
        return self.steps_from(self._doc)

    def document(self) -> Any:
        if not self._parsed:
            text = "\n".join(self._parts)
            self._parts = []
            try:
                self._doc = load_json(text)
            except ValueError as exc:
                line = getattr(exc, "lineno", None)
                raise ParseError(self.file_name, line, f"not valid JSON ({getattr(exc, 'msg', exc)})") from None
            except RecursionError:
                raise ParseError(self.file_name, None, "JSON nested too deeply") from None
            self._parsed = True
            self._late_steps = self.steps_from(self._doc)
        return self._doc

    def steps_from(self, doc: Any) -> pl.DataFrame:
        return empty_steps()

    def final_steps(self) -> pl.DataFrame:
        """Steps found only when finish() parsed the document (normally empty: feed() returned them)."""
        return self._late_steps


def summary_results(entry: dict[str, Any], *, file_name: str, locator: str, evidence: Evidence) -> list[ResultRecord]:
    """A Trainer summary (train_runtime, train_samples_per_second ...) -> samples/s over the whole run."""
    samples_per_s = json_number(entry.get("train_samples_per_second"))
    if samples_per_s is None or samples_per_s <= 0:
        return []
    runtime = json_number(entry.get("train_runtime"))
    note = "HF Trainer train_samples_per_second over the whole run (includes warm-up and any eval inside train)"
    if runtime is not None:
        note += f"; train_runtime {runtime:g} s"
    return [
        ResultRecord(
            metric=Metric.SAMPLES_PER_S.value,
            value=samples_per_s,
            unit=Metric.SAMPLES_PER_S.unit,
            framework="transformers",
            evidence=evidence.value,
            locator=locator,
            note=note,
        )
    ]


class HfTrainerStateParser(JsonFileParser):
    format = LogFormat.HF_TRAINER_STATE

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        stripped = head.lstrip()
        return stripped.startswith("{") and '"log_history"' in head

    def finish(self) -> ParseSummary:
        doc = self.document()
        history = doc.get("log_history") if isinstance(doc, dict) else None
        if not isinstance(history, list):
            raise ParseError(self.file_name, None, "no log_history list: not a trainer_state.json")
        rows, summary = self._rows(history)
        if not rows and summary is None:
            raise ParseError(self.file_name, None, "log_history holds no training entries")
        warnings = ["trainer_state.json has no timestamps: steps have no step time"] if rows else []
        results = summary_results(summary or {}, file_name=self.file_name, locator="log_history[-1]",
                                  evidence=Evidence.MEASURED)
        batch = doc.get("train_batch_size")
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework="transformers", micro_batch=batch if isinstance(batch, int) else None),
            problems=tuple(self.problems),
            warnings=tuple(warnings),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta=_meta(doc, summary),
        )

    def steps_from(self, doc: Any) -> pl.DataFrame:
        history = doc.get("log_history") if isinstance(doc, dict) else None
        return steps_frame(self._rows(history, quiet=True)[0]) if isinstance(history, list) else empty_steps()

    def _rows(self, history: list[Any], *, quiet: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        rows: list[dict[str, Any]] = []
        summary: dict[str, Any] | None = None
        for index, entry in enumerate(history):
            if not isinstance(entry, dict):
                if not quiet:
                        self.problem(None, f"log_history[{index}] is not an object; skipped")
            elif "train_runtime" in entry:
                summary = entry
            elif "loss" in entry and isinstance(entry.get("step"), int):
                rows.append({"step": entry["step"], "loss": json_number(entry.get("loss")),
                             "lr": json_number(entry.get("learning_rate")), "grad_norm": json_number(entry.get("grad_norm"))})
        return rows, summary


def _meta(doc: dict[str, Any], summary: dict[str, Any] | None) -> dict[str, Any]:
    keep = ("global_step", "max_steps", "num_train_epochs", "logging_steps", "total_flos", "train_batch_size")
    meta = {k: doc[k] for k in keep if k in doc}
    if summary:
        meta["train_summary"] = summary
    return meta


PARSER = HfTrainerStateParser
