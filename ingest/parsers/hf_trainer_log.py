"""Hugging Face Trainer console output: printed dicts (`{'loss': 1.23, 'learning_rate': ..., 'epoch': 0.1}`),
tqdm bars (`549/5490 [05:02<38:38,  2.13it/s]`, frames separated by "\\r" inside one line), the final
`{'train_runtime': ...}` dict (printed once per rank in multi-rank runs: the first is kept, the others counted)
and the `***** train metrics *****` block (`train_runtime = 0:15:19.02`), plus `***** Running training *****`
header lines (batch sizes, accumulation).

A loss dict carries no step number: it takes the training bar's step count last seen before it. Printed dicts
are read with ast.literal_eval (literals only, never code), and their names through the key vocabulary
(ingest/parsers/_records.py), as every record stream is.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import to_float, to_int
from ingest.parsers._hf import summary_results
from ingest.parsers._records import StepRecords
from ingest.parsers.base import LogParser
from ingest.parsers.metrics_file import record_text
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import Evidence, LogFormat

_DICT = re.compile(r"\{'(?:loss|train_runtime|eval_loss|train_loss)'[^{}]*\}")
# Linear time: a count starts after a non-digit and every run is bounded (unbounded, each digit of a long run
# started a new scan of the run: 14.6 s on a 40K-character line).
_BAR = re.compile(r"(?<!\d)(\d{1,12})/(\d{1,12}) \[[\d:]{1,20}<[\d:?]{1,20},\s{0,8}[\d.?]{1,20}\s{0,8}(?:it/s|s/it)")
_METRIC_LINE = re.compile(r"^\s*(\w+)\s*=\s*(\S+)\s*$")
_HEADER = {
    "micro_batch": re.compile(r"Instantaneous batch size per device = ([\d,]+)"),
    "global_batch": re.compile(r"Total train batch size \([^()]*\) = ([\d,]+)"),
    "grad_accum": re.compile(r"Gradient Accumulation steps = ([\d,]+)"),
}
_LOGGING_STEPS = re.compile(r"\blogging_steps=(\d+)")
_HALF = re.compile(r"\b(fp16|bf16)=True\b")
_TOTAL_STEPS = re.compile(r"Total optimization steps = ([\d,]+)")
_SNIFF = re.compile(r"\{'(?:loss|train_runtime)': |\*\*\*\*\* (?:Running training|train metrics) \*\*\*\*\*")


def hms_seconds(text: str) -> float | None:
    """'0:15:19.02' -> 919.02; '17:52:38.15' -> 64358.15; a plain number passes through."""
    values = [to_float(p) for p in text.split(":")]
    if None in values:
        return None  # not a number, or not a finite one
    seconds = 0.0
    for value in values:
        seconds = seconds * 60 + (value or 0.0)
    return seconds if math.isfinite(seconds) else None


class HfTrainerLogParser(LogParser):
    format = LogFormat.HF_TRAINER_LOG

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return _SNIFF.search(head) is not None

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.config: dict[str, int] = {}
        self.bar_step: int | None = None
        self.total_steps: int | None = None
        self.summary: dict[str, Any] | None = None
        self.summary_repeats = 0
        self.block: dict[str, Any] = {}
        self.in_block = False
        self.steps = 0
        self.eval_dicts = 0
        self.logging_steps: int | None = None
        self.precision: str | None = None
        self.records = StepRecords()  # the dicts' names read through the key vocabulary

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            for frame in line.split("\r") if "\r" in line else (line,):
                self._frame(frame, first_lineno + offset, rows)
        if not rows:
            return empty_steps()
        names = dict.fromkeys(k for row in rows for k in row)
        return self.records.steps(pl.DataFrame(rows, schema=dict.fromkeys(names, pl.String)))

    def _frame(self, text: str, lineno: int, rows: list[dict[str, Any]]) -> None:
        if "/" in text and ("it/s" in text or "s/it" in text):
            self._bars(text)
        if "{'" in text:
            for found in _DICT.finditer(text):
                self._dict(found.group(0), lineno, rows)
            return
        if "*****" in text:
            self.in_block = "train metrics" in text
            return
        if "=" in text:
            self._header_or_metric(text)
            if self.logging_steps is None and (m := _LOGGING_STEPS.search(text)) is not None:
                self.logging_steps = to_int(m.group(1))
            if self.precision is None and (m := _HALF.search(text)) is not None:
                self.precision = m.group(1)

    def _bars(self, text: str) -> None:
        for m in _BAR.finditer(text):
            total = int(m.group(2))
            if self.total_steps is None or total == self.total_steps:
                self.bar_step = int(m.group(1))

    def _dict(self, text: str, lineno: int, rows: list[dict[str, Any]]) -> None:
        try:
            values = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            self.problem(lineno, "printed metrics dict could not be read; skipped")
            return
        if not isinstance(values, dict):
            return
        if "train_runtime" in values:
            if self.summary is None:
                self.summary = values
            else:
                self.summary_repeats += 1
        elif "loss" in values:
            self.steps += 1
            # HF logs when global_step % logging_steps == 0, so the k-th loss dict is step k * logging_steps
            step = self.steps * self.logging_steps if self.logging_steps else self.bar_step or self.steps
            rows.append({k: record_text(v) for k, v in values.items()} | {"step": str(step)})
        else:
            self.eval_dicts += 1

    def _header_or_metric(self, text: str) -> None:
        for name, rx in _HEADER.items():
            if (m := rx.search(text)) is not None:
                if (count := to_int(m.group(1), thousands=True)) is not None:
                    self.config.setdefault(name, count)
                return
        if (m := _TOTAL_STEPS.search(text)) is not None:
            self.total_steps = to_int(m.group(1), thousands=True)
            return
        if self.in_block:
            body = text.split(">>", 1)[-1]
            if (m := _METRIC_LINE.match(body)) is not None:
                self.block.setdefault(m.group(1), m.group(2))

    def finish(self) -> ParseSummary:
        summary = self.summary or self._block_summary()
        if self.steps == 0 and summary is None:
            raise ParseError(self.file_name, None, "no Trainer loss dicts or train summary found")
        warnings = ["printed Trainer dicts have no step time: steps have no step_time_s"] if self.steps else []
        if self.steps == 0:
            warnings.append("no loss dicts (logging_steps not reached): only the run summary was read")
        if self.summary_repeats:
            warnings.append(f"train summary printed {self.summary_repeats + 1} times (once per rank); the first kept")
        locator = "printed {'train_runtime': ...} dict" if self.summary else "***** train metrics ***** block"
        results = summary_results(summary or {}, file_name=self.file_name, locator=locator, evidence=Evidence.MEASURED)
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework="transformers", precision=self.precision, n_devices=self._devices(),
                             micro_batch=self.config.get("micro_batch"), global_batch=self.config.get("global_batch"),
                             grad_accum=self.config.get("grad_accum")),
            problems=tuple(self.problems),
            warnings=tuple(warnings),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta={"train_summary": summary, "eval_dicts": self.eval_dicts, "total_steps": self.total_steps,
                  "ranks_printing_summary": self.summary_repeats + 1 if self.summary else None},
        )

    def _devices(self) -> int | None:
        gbs, micro, ga = (self.config.get(k) for k in ("global_batch", "micro_batch", "grad_accum"))
        if not gbs or not micro or not ga or gbs % (micro * ga):
            return None
        return gbs // (micro * ga)

    def _block_summary(self) -> dict[str, Any] | None:
        if "train_samples_per_second" not in self.block:
            return None
        out: dict[str, Any] = {}
        for key, raw in self.block.items():
            value = hms_seconds(raw) if key == "train_runtime" else to_float(raw, thousands=True)
            if value is not None:
                out[key] = value
        return out



PARSER = HfTrainerLogParser
