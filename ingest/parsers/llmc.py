"""llm.c's `-o` log file (main.log): `s:10 trl:3.2 lr:0.0006 norm:1.2` per training step, `s:N tel:3.27`
validation loss and `s:N eval:0.31` HellaSwag accuracy lines.

The file holds no step time and no token count, so steps carry loss, lr and grad norm only, and the summary
warns that throughput cannot be derived from this file alone (llm.c prints timings on stdout, not here).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import to_float, to_int
from ingest.parsers._metric_lines import FLOAT, MetricLineParser
from perfledger.records import ParseSummary, steps_frame
from perfledger.vocabulary import LogFormat

_TRAIN = re.compile(r"^s:(\d+) trl:" + FLOAT + r"(?: lr:" + FLOAT + r")?(?: norm:" + FLOAT + r")?")
_VAL = re.compile(r"^s:(\d+) tel:" + FLOAT)
_EVAL = re.compile(r"^s:(\d+) eval:" + FLOAT)
_SNIFF = re.compile(r"^s:\d+ (?:trl|tel):\S+", re.MULTILINE)

NO_THROUGHPUT_WARNING = (
    "llm.c's main.log records no step time or tokens: throughput cannot be derived from this file alone "
    "(ingest the run's stdout, or give tokens/s by hand)"
)


class LlmcParser(MetricLineParser):
    format = LogFormat.LLMC
    sniff_pattern = _SNIFF
    framework = "llm.c"
    expected_lines = "llm.c `s:N trl:...` training"

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.meta.update(val_lines=0, eval_lines=0)

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if not line.startswith("s:"):
                continue
            m = _TRAIN.match(line) or _VAL.match(line) or _EVAL.match(line)
            if m is not None and (step := to_int(m.group(1))) is None:
                self.step_too_big(first_lineno + offset, m.group(1))
            elif m is not None and m.re is _TRAIN:
                self.steps += 1
                rows.append({"step": step, "loss": to_float(m.group(2)), "lr": to_float(m.group(3)),
                             "grad_norm": to_float(m.group(4))})
            elif m is not None and m.re is _VAL:
                self.meta["val_lines"] += 1
                self.meta["last_val_loss"] = {"step": step, "loss": to_float(m.group(2))}
            elif m is not None:
                self.meta["eval_lines"] += 1
                self.meta["last_eval"] = {"step": step, "accuracy": to_float(m.group(2))}
            else:
                self.problem(first_lineno + offset, "an `s:` line that is neither trl, tel nor eval; skipped")
        return steps_frame(rows)

    def finish(self) -> ParseSummary:
        return self.summary((NO_THROUGHPUT_WARNING,), self.meta)


PARSER = LlmcParser
