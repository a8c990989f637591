"""What the micro-benchmark measures and what one measurement is: plain records, no torch.

Each measurement is timed as `repeats` single calls after `warmup` calls, with the device synchronized before
the clock stops; median, min and max are written, and TFLOPS are model FLOPs over the median.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from perfledger.errors import InvalidInput

BENCH_PRECISIONS = ("fp32", "fp16", "bf16")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """What to measure. The defaults are the GPT-2 XL layer of Emani et al. (arXiv 2310.04607)."""

    hidden: int = 1600
    heads: int = 25
    ffn_hidden: int = 6400
    seq_len: int = 1024
    batches: tuple[int, ...] = (8, 16, 32, 64)
    precisions: tuple[str, ...] = BENCH_PRECISIONS
    warmup: int = 3
    repeats: int = 10
    matmul_sizes: tuple[int, ...] = (1024, 2048, 4096, 8192, 16384)
    tiny: bool = False


FULL = BenchConfig()
TINY = BenchConfig(
    hidden=64,
    heads=4,
    ffn_hidden=256,
    seq_len=32,
    batches=(2,),
    precisions=("fp32", "bf16"),
    warmup=1,
    repeats=3,
    matmul_sizes=(256, 384, 512),
    tiny=True,
)


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    device: str  # what torch calls it: "cpu", "cuda:0" (ROCm devices are "cuda" in torch too)
    backend: str  # cuda | rocm | cpu
    name: str  # as the driver or /proc/cpuinfo prints it


@dataclass(frozen=True, slots=True)
class Timing:
    median_s: float
    min_s: float
    max_s: float
    repeats: int


_SHAPE_FIELDS = ("batch", "seq_len", "hidden", "heads", "ffn_hidden", "pass_", "m", "n", "k")


@dataclass(frozen=True, slots=True)
class Measurement:
    """One timed kernel; a block has batch..heads and a pass, a matmul has m, n, k."""

    kind: str  # block | matmul
    precision: str
    timing: Timing
    flops: float
    batch: int | None = None
    seq_len: int | None = None
    hidden: int | None = None
    heads: int | None = None
    ffn_hidden: int | None = None
    pass_: str | None = None  # fwd | fwd+bwd
    m: int | None = None
    n: int | None = None
    k: int | None = None

    @property
    def tflops(self) -> float:
        return self.flops / self.timing.median_s / 1e12

    def to_json(self) -> dict[str, Any]:
        shape = {name.rstrip("_"): getattr(self, name) for name in _SHAPE_FIELDS}
        return {"kind": self.kind, "precision": self.precision, **shape, **asdict(self.timing),
                "flops": self.flops, "tflops": self.tflops}


def summarize(samples: Sequence[float]) -> Timing:
    """Median, min and max of per-call times in seconds."""
    if not samples:
        raise InvalidInput("no timed repeats: repeats must be at least 1")
    return Timing(statistics.median(samples), min(samples), max(samples), len(samples))


def time_calls(call: Callable[[], object], sync: Callable[[], None], *, warmup: int, repeats: int) -> list[float]:
    """Seconds per call after `warmup` untimed calls; `sync` waits for the device before each clock read."""
    for _ in range(warmup):
        call()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        sync()
        samples.append(time.perf_counter() - start)
    return samples


def describe(m: Measurement) -> str:
    """One progress line: precision, what was timed, the timing and the TFLOP/s over the median."""
    what = f"matmul {m.m}^3" if m.kind == "matmul" else f"block batch {m.batch} {m.pass_}"
    t = m.timing
    return (f"{m.precision:>4} {what:<22} median {t.median_s * 1e3:9.3f} ms (min {t.min_s * 1e3:.3f}, "
            f"max {t.max_s * 1e3:.3f}, n={t.repeats})  {m.tflops:8.3f} TFLOP/s")


def best_matmul(measurements: Sequence[Measurement]) -> dict[str, Measurement]:
    """The fastest matmul per precision, by TFLOPS over the median time."""
    best: dict[str, Measurement] = {}
    for m in measurements:
        if m.kind == "matmul" and (m.precision not in best or m.tflops > best[m.precision].tflops):
            best[m.precision] = m
    return best
