"""DLLogger JSON lines (``DLLL {json}``), as NeMo and NVIDIA's example recipes write them.

One JSON object per line: a ``"step": "PARAMETER"`` record with the config (``cfg/...`` keys), then one record
per step with ``reduced_train_loss``, ``lr``, ``global_step``, ``consumed_samples``, ``grad_norm`` and
``train_step_timing in s``. Each line is self-contained, so the file is read line by line; the total text
read is capped so a file of one endless line cannot take the memory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import json_number, load_json, precision_from_name, run_config, to_bool, to_int
from ingest.parsers._nemo import IncreasingSteps, cfg_int, model_shape, step_row
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps, steps_frame
from perfledger.vocabulary import LogFormat

MAX_BYTES = 256 * 1024 * 1024


class DLLoggerParser(LogParser):
    format = LogFormat.DLLOGGER

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return head.lstrip().startswith("DLLL {")

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._params: dict[str, Any] = {}
        self._steps = IncreasingSteps()
        self._bytes = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            self._bytes += len(line) + 1
            if self._bytes > MAX_BYTES:
                raise ParseError(self.file_name, first_lineno + offset,
                                 f"DLLogger file larger than {MAX_BYTES // 2**20} MB; refused")
            if line.strip():
                self._record(line, first_lineno + offset, rows)
        return steps_frame(rows) if rows else empty_steps()

    def _record(self, line: str, lineno: int, rows: list[dict[str, Any]]) -> None:
        body = line.strip().removeprefix("DLLL ")
        try:
            record = load_json(body)
        except json.JSONDecodeError as exc:
            self.problem(lineno, f"not a JSON record ({exc.msg}); skipped (cut short?)")
            return
        if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
            self.problem(lineno, "JSON record without a 'data' object; skipped")
            return
        data: dict[str, Any] = record["data"]
        if record.get("step") == "PARAMETER":
            self._params.update(data)
            return
        step = to_int(data.get("global_step", record.get("step")))
        if step is None:
            self.problem(lineno, "record without a step number; skipped")
            return
        if self._steps.take(step):
            rows.append(step_row(step, data, json_number, gbs=self._p("global_batch_size"),
                                 seq=self._p("encoder_seq_length")))

    def _p(self, key: str) -> int | None:
        return cfg_int(self._params, key)

    def finish(self) -> ParseSummary:
        if not self._steps.kept:
            raise ParseError(self.file_name, None, "no DLLogger step record found (expected 'DLLL {...\"step\": N, "
                                                   "\"data\": {\"train_step_timing in s\": ...}}' lines)")
        repeats = self._steps.repeats
        warnings = [f"{repeats} records repeated a step already read; first kept"] if repeats else []
        warnings.append("world size not stated in DLLogger output: per-device figures need --devices")
        return ParseSummary(format=self.format, config=self._config(), problems=tuple(self.problems),
                            warnings=tuple(warnings), skipped_lines=self.skipped_lines)

    def _config(self) -> RunConfig:
        p = self._params
        fp8 = p.get("cfg/fp8")
        return run_config({
            "precision": "fp8" if fp8 is True else precision_from_name(_str(p.get("cfg/precision"))),
            "seq_len": self._p("encoder_seq_length"),
            "global_batch": self._p("global_batch_size"),
            "micro_batch": self._p("micro_batch_size"),
            "tp": self._p("tensor_model_parallel_size"),
            "pp": self._p("pipeline_model_parallel_size"),
            "cp": self._p("context_parallel_size"),
            "framework": "nemo",
            **model_shape(p),
            "swiglu": ("glu" in str(p.get("cfg/activation")).lower()) if p.get("cfg/activation") else None,
            "strategy": "fsdp" if to_bool(_str(p.get("cfg/fsdp"))) else None,
        })


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


PARSER = DLLoggerParser
