"""nanoGPT stdout: `iter 10: loss 2.3456, time 123.45ms, mfu 12.34%` per logged iteration, and
`step 250: train loss 2.1, val loss 2.2` evaluation lines (kept as a count and the last values, not steps).

nanoGPT prints mfu -100.00% until it has a running estimate (the first iterations): that is "not measured",
so it becomes null. A `loss nan` survives as NaN: a diverged run is still a run. `time` is the wall time of
the logged iteration, in milliseconds, converted to seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import to_float, to_int
from ingest.parsers._metric_lines import FLOAT as _FLOAT
from ingest.parsers._metric_lines import MetricLineParser
from perfledger.records import ParseSummary, steps_frame
from perfledger.vocabulary import LogFormat

_ITER = re.compile(
    r"^\s*iter (\d+): loss " + _FLOAT + r", time " + _FLOAT + r"\s*ms(?:, mfu " + _FLOAT + r"%)?", re.IGNORECASE
)
_EVAL = re.compile(r"^\s*step (\d+): train loss " + _FLOAT + r", val loss " + _FLOAT)
_TOKENS_PER_ITER = re.compile(r"tokens per iteration will be: ([\d,]+)")
_PARAMS = re.compile(r"number of parameters: ([\d.]+)M")
_SNIFF = re.compile(r"^\s*iter \d+: loss \S+, time \S+ms", re.MULTILINE)


class NanogptParser(MetricLineParser):
    format = LogFormat.NANOGPT
    sniff_pattern = _SNIFF
    framework = "nanoGPT"
    expected_lines = "nanoGPT `iter N: loss ..., time ...ms`"

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.nan_losses = 0
        self.tokens_per_iter: int | None = None
        self.meta["eval_lines"] = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if (m := _ITER.match(line) or _EVAL.match(line)) is not None and to_int(m.group(1)) is None:
                self.step_too_big(first_lineno + offset, m.group(1))
            elif m is not None and m.re is _ITER:
                rows.append(self._row(m))
            elif m is not None:
                self.meta["eval_lines"] += 1
                self.meta["last_eval"] = {"step": to_int(m.group(1)), "train_loss": to_float(m.group(2)),
                                          "val_loss": to_float(m.group(3))}
            elif (m := _TOKENS_PER_ITER.search(line)) is not None:
                self.tokens_per_iter = to_int(m.group(1), thousands=True)
            elif (m := _PARAMS.search(line)) is not None:
                self.meta["parameters_millions"] = to_float(m.group(1))
        return steps_frame(rows)

    def _row(self, m: re.Match[str]) -> dict[str, Any]:
        self.steps += 1
        loss = to_float(m.group(2))
        self.nan_losses += loss is None  # the pattern reads only numbers: None is nan, inf or past the float range
        mfu = to_float(m.group(4))
        step_ms = to_float(m.group(3))
        return {
            "step": to_int(m.group(1)),
            "loss": loss,
            "step_time_s": None if step_ms is None else step_ms / 1000.0,
            "reported_mfu": mfu / 100.0 if mfu is not None and mfu >= 0 else None,
            "tokens": float(self.tokens_per_iter) if self.tokens_per_iter else None,
        }

    def finish(self) -> ParseSummary:
        warnings = []
        if self.nan_losses:
            warnings.append(f"{self.nan_losses} logged iterations have loss nan (the run diverged)")
        if self.tokens_per_iter is None:
            warnings.append("`tokens per iteration` not printed: tokens per step unknown")
        return self.summary(tuple(warnings), {**self.meta, "tokens_per_iter": self.tokens_per_iter})


PARSER = NanogptParser
