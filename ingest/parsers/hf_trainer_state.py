"""Hugging Face Trainer `trainer_state.json`: `log_history` entries (loss, learning_rate, grad_norm, epoch,
step, num_input_tokens_seen ...: read through the key vocabulary, ingest/parsers/_records.py), eval/predict entries, and the final summary entry (train_runtime, train_samples_per_second,
train_steps_per_second, total_flos).

log_history carries no timestamps, so steps have no step_time_s (a warning says so); the run's throughput
comes from the Trainer's own summary: samples/s over the whole run (evidence measured). Whole-file JSON is
buffered, up to MAX_JSON_BYTES (ingest/parsers/_hf.py, shared with the other whole-file JSON formats).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ingest.parsers._common import to_int
from ingest.parsers._hf import JsonFileParser, summary_results
from ingest.parsers._record_text import record_text as _text
from ingest.parsers._records import StepRecords
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import Evidence, LogFormat


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
        if not isinstance(history, list):
            return empty_steps()
        rows = self._rows(history, quiet=True)[0]
        if not rows:
            return empty_steps()
        return StepRecords().steps(pl.DataFrame(rows, schema=dict.fromkeys(dict.fromkeys(k for r in rows for k in r),
                                                                           pl.String)))

    def _rows(self, history: list[Any], *, quiet: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The training entries as records of the names they log (read through the key vocabulary), and the
        end-of-run summary entry."""
        rows: list[dict[str, Any]] = []
        summary: dict[str, Any] | None = None
        for index, entry in enumerate(history):
            if not isinstance(entry, dict):
                if not quiet:
                    self.problem(None, f"log_history[{index}] is not an object; skipped")
            elif "train_runtime" in entry:
                summary = entry
            elif "loss" in entry and isinstance(entry.get("step"), int):
                if to_int(entry["step"]) is None:
                    if not quiet:
                        self.problem(None, f"log_history[{index}]: step {entry['step']} is beyond 64 bits; skipped")
                    continue
                rows.append({k: _text(v) for k, v in entry.items()})
        return rows, summary


def _meta(doc: dict[str, Any], summary: dict[str, Any] | None) -> dict[str, Any]:
    keep = ("global_step", "max_steps", "num_train_epochs", "logging_steps", "total_flos", "train_batch_size")
    meta = {k: doc[k] for k in keep if k in doc}
    if summary:
        meta["train_summary"] = summary
    return meta


PARSER = HfTrainerStateParser
