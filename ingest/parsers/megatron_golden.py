"""Megatron-LM CI "golden values" JSON: ``{"lm loss": {"start_step", "end_step", "step_interval", "values":
{"1": 10.9, ...}}, "iteration-time": {...}, "mem-max-allocated-bytes": {...}, ...}``.

A whole-file JSON document: the text is buffered (capped at 256 MB) and read in finish... except that steps must
leave through feed(), so the document is parsed as soon as it is complete JSON, which for a file means at the
last chunk; a chunk that does not complete it returns no steps. ``iteration-time`` is in seconds; "nan"
values (the release tests record none) stay NaN. Memory is bytes / 2**30 (GiB).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import load_json, to_float, to_int
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps, steps_frame
from perfledger.vocabulary import LogFormat

MAX_BYTES = 256 * 1024 * 1024
_METRICS = {"lm loss": "loss", "iteration-time": "step_time_s", "mem-max-allocated-bytes": "memory_gb"}


class MegatronGoldenParser(LogParser):
    format = LogFormat.MEGATRON_GOLDEN

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        start = head.lstrip()[:4000]
        return start.startswith("{") and '"values"' in start and ('"lm loss"' in start or '"iteration-time"' in start)

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._parts: list[str] = []
        self._size = 0
        self._rows = 0
        self._done = False
        self._series: list[str] = []
        self._nan_times = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        if self._done:
            return empty_steps()
        for line in lines:
            self._size += len(line) + 1
            if self._size > MAX_BYTES:
                raise ParseError(self.file_name, first_lineno, f"golden-values JSON larger than "
                                                               f"{MAX_BYTES // 2**20} MB; refused")
        self._parts.append("\n".join(lines))
        try:
            document = load_json("\n".join(self._parts))
        except json.JSONDecodeError:
            return empty_steps()  # not complete yet (or broken: finish says so)
        self._done = True
        self._parts = []
        return self._steps(document)

    def _steps(self, document: Any) -> pl.DataFrame:
        if not isinstance(document, dict):
            return empty_steps()
        by_step: dict[int, dict[str, Any]] = {}
        for name, column in _METRICS.items():
            block = document.get(name)
            if not isinstance(block, dict) or not isinstance(block.get("values"), dict):
                continue
            self._series.append(name)
            for key, raw in block["values"].items():
                step, value = to_int(key), to_float(raw)
                if step is None:
                    continue
                if column == "memory_gb" and value is not None:
                    value /= 2**30
                if column == "step_time_s" and value is None and str(raw).strip().lower() == "nan":
                    self._nan_times += 1
                by_step.setdefault(step, {"step": step})[column] = value
        self._rows = len(by_step)
        return steps_frame([by_step[s] for s in sorted(by_step)])

    def finish(self) -> ParseSummary:
        if not self._done:
            raise ParseError(self.file_name, None, "not complete JSON (cut short?); golden values need the whole file")
        if not self._rows:
            raise ParseError(self.file_name, None, "golden-values JSON without 'lm loss' or 'iteration-time' values")
        warnings = [("CI golden values: no configuration in the file (model, devices and batch come from the test "
                     "case's model_config.yaml); pass --model/--devices")]
        if self._nan_times:
            warnings.append(f"{self._nan_times} steps have iteration-time 'nan' (not recorded by this test)")
        return ParseSummary(format=self.format, config=RunConfig(framework="megatron-lm"),
                            warnings=tuple(warnings), meta={"series": self._series})


PARSER = MegatronGoldenParser
