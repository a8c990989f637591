"""The torchtitan parser's step reading as first written, one line at a time in Python (test oracle only).

ingest/parsers/torchtitan.py reads step lines vectorized; tests/ingest/test_torchtitan_vectorized.py checks
that both give the same steps, problems and configuration. Only feed() differs: configuration lines, the
summary and the warnings are the real parser's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers import torchtitan
from ingest.parsers.torchtitan import _FIELDS, _STEP, _VALIDATE, GIB_TO_GB
from perfledger.records import steps_frame


def _num(text: str | None) -> float | None:
    """A printed number; None when absent, unreadable or infinite ("inf", "1e309"). NaN is nulled by the step
    frame except in the loss."""
    if text is None:
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return None if math.isinf(value) else value


class TorchtitanParser(torchtitan.TorchtitanParser):
    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if "step:" in line:
                if _VALIDATE.search(line):
                    self.validation_lines += 1
                    continue
                if (m := _STEP.search(line)) is not None:
                    row = self._row(int(m.group(1)), m.group("rest"))
                    if row is None:
                        self.problem(first_lineno + offset, "step line without loss, tps or tflops; skipped")
                    else:
                        rows.append(row)
                    continue
            self._config_line(line)
        return steps_frame(rows)

    def _row(self, step: int, rest: str) -> dict[str, Any] | None:
        found = {name: _num(m.group(1)) if (m := rx.search(rest)) else None for name, rx in _FIELDS.items()}
        if found["loss"] is None and found["tps"] is None and found["tflops"] is None:
            return None
        found = {name: None if name != "loss" and value is not None and math.isnan(value) else value
                 for name, value in found.items()}
        self.steps += 1
        step_time = found["time_s"]
        self.saw_step_time = self.saw_step_time or step_time is not None
        mfu, mem = found["mfu_pct"], found["memory_gib"]
        devices = self._devices()
        tps = found["tps"]
        return {
            "step": step,
            "step_time_s": step_time,
            "loss": found["loss"],
            "lr": found["lr"],
            "grad_norm": found["grad_norm"],
            "reported_tokens_per_s_per_device": tps,
            "reported_tflops_per_device": found["tflops"],
            "reported_mfu": mfu / 100.0 if mfu is not None else None,
            "memory_gb": mem * GIB_TO_GB if mem is not None else None,
            "tokens": tps * step_time * devices if tps is not None and step_time is not None and devices is not None
            else None,
        }
