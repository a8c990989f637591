"""What the Hugging Face formats share: the whole-file JSON buffer (trainer_state.json, all_results.json,
optimum-habana baselines) and the Trainer's run summary (train_runtime, train_samples_per_second) as a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import json_number, load_json
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ResultRecord, empty_steps
from perfledger.vocabulary import Evidence, Metric

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
