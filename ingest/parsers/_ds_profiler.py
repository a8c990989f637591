"""DeepSpeed's flops profiler summary: the FLOPS per GPU of the one step it profiled.

    -------------------------- DeepSpeed Flops Profiler --------------------------
    Profile Summary at step 10:
    ...
    FLOPS per GPU = 3 * fwd flops per GPU / iter latency:          100.41 TFLOPS

The figure counts the forward FLOPs the profiler measured on every module, times 3 for the backward, over the
profiled step's latency: the log's own TFLOP/s per device, printed once (every rank may print it: the first is
kept).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ingest.parsers._common import NUM, to_float, to_int
from perfledger.records import ResultRecord
from perfledger.vocabulary import Metric

MARKER = "FLOPS per GPU ="
_STEP = re.compile(r"Profile Summary at step (\d+)")
_FLOPS = re.compile(rf"(?<![\w+])FLOPS per GPU = [^:]{{0,80}}iter latency:\s*({NUM})\s*([KMGTP]?)FLOPS")
_TERA = {"": 1e-12, "K": 1e-9, "M": 1e-6, "G": 1e-3, "T": 1.0, "P": 1e3}


class FlopsProfile:
    """The profiler's summaries read so far (the first kept)."""

    def __init__(self) -> None:
        self._step: int | None = None
        self.result: ResultRecord | None = None
        self.repeats = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> None:
        for offset, line in enumerate(lines):
            if (m := _STEP.search(line)) is not None:
                self._step = to_int(m.group(1))
            elif MARKER in line and (m := _FLOPS.search(line)) is not None:
                self._take(m, first_lineno + offset)

    def _take(self, m: re.Match[str], lineno: int) -> None:
        value = to_float(m.group(1))
        if value is None or value <= 0:
            return
        if self.result is not None:
            self.repeats += 1
            return
        at = f"step {self._step}" if self._step is not None else "one step"
        self.result = ResultRecord(
            metric=Metric.MODEL_TFLOPS_PER_DEVICE.value, value=value * _TERA[m.group(2)],
            unit=Metric.MODEL_TFLOPS_PER_DEVICE.unit, framework="deepspeed", evidence="reported",
            locator=f"line {lineno}",
            note=f"DeepSpeed flops profiler, over the one step it profiled ({at}): 3 x measured forward FLOPs / "
                 "iteration latency")
