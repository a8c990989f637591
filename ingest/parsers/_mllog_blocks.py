"""Step time from MLLOG's block events, for result files that log no per-step figure (MaxDiffusion on TPU, say):
a `block_start` / `block_stop` pair spans the steps between their `step_num` (or their `samples_count` over the
global batch), so each block gives one row at its last step with the block's time over its steps, and the loss and
learning rate its stop event carries. A block that ends before it starts (a clock that stepped back) gives no row
and is counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ingest.parsers._common import json_number, step_frame_from_columns


@dataclass(slots=True)
class BlockTimer:
    started: tuple[float, dict[str, Any]] | None = None
    rows: list[dict[str, float | None]] = field(default_factory=list)
    backwards: int = 0  # blocks whose stop came before their start

    def start(self, time_ms: float | None, meta: dict[str, Any]) -> None:
        self.started = (time_ms, meta) if time_ms is not None else None

    def stop(self, time_ms: float | None, meta: dict[str, Any], global_batch: int | None) -> None:
        if self.started is None or time_ms is None:
            return
        began, first = self.started
        self.started = None
        span = _steps(first, meta, global_batch)
        if span is None:
            return
        step, steps = span
        if time_ms <= began:
            self.backwards += 1
            return
        self.rows.append({"step": step, "step_time_s": (time_ms - began) / 1000.0 / steps,
                          "loss": json_number(meta.get("loss")), "lr": json_number(meta.get("lr")),
                          "samples": float(global_batch) if global_batch else None})

    def frame(self) -> pl.DataFrame:
        columns = {k: pl.Series(k, [r[k] for r in self.rows]) for k in ("step", "step_time_s", "loss", "lr", "samples")}
        return step_frame_from_columns(columns, len(self.rows))


def _steps(first: dict[str, Any], last: dict[str, Any], global_batch: int | None) -> tuple[int, int] | None:
    """(the block's last step, the steps in it) from its events' step_num, else samples_count / global batch."""
    a, b = json_number(first.get("step_num")), json_number(last.get("step_num"))
    if a is None or b is None:
        s0, s1 = json_number(first.get("samples_count")), json_number(last.get("samples_count"))
        if s0 is None or s1 is None or not global_batch:
            return None
        a, b = s0 / global_batch, s1 / global_batch
    if b <= a or b != int(b) or a != int(a):
        return None
    return int(b), int(b - a)
