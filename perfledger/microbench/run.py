"""The measuring code of `python -m perfledger.microbench`.

torch is imported inside the functions that measure, never at module level, so this module (and the
parser that reads its files) imports on a machine without torch. Each measurement is timed as
`repeats` single calls after `warmup` calls, with the device synchronized before the clock stops;
median, min and max are written, and TFLOPS are model FLOPs from perfledger.calc over the median.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perfledger.calc.block_flops import matmul_flops, transformer_block_flops
from perfledger.errors import InvalidInput, PerfledgerError, UnknownId
from perfledger.microbench import FORMAT_VERSION, HEADER_KEY, TORCH_MISSING

if TYPE_CHECKING:
    import torch

BENCH_PRECISIONS = ("fp32", "fp16", "bf16")
_ATTENTION = "causal scaled_dot_product_attention; FLOPs count the full s^2 term (F_req, no causal halving)"
_FORWARD = "training forward (autograd on, graph discarded); fwd+bwd adds input and weight gradients"


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


def cpu_model_from_cpuinfo(text: str) -> str | None:
    """The first "model name" of /proc/cpuinfo text, or None when it has none (e.g. some ARM kernels)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def cpu_model_name() -> str:
    try:
        found = cpu_model_from_cpuinfo(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        found = None
    return found or platform.processor() or platform.machine() or "unknown CPU"


def resolve_accelerator_id(device_name: str, backend: str) -> tuple[str | None, str | None]:
    """(canonical accelerator id or None, a warning or None). CPUs have no id in the catalog."""
    if backend == "cpu":
        return None, None
    try:
        from perfledger.catalog import resolve_accelerator  # written beside this module; may be absent
    except ImportError as exc:
        return None, f"accelerator id left empty: the catalog is not available ({exc})"
    try:
        return resolve_accelerator(device_name), None
    except UnknownId as exc:
        return None, f"accelerator id left empty: {exc}; ingest with --accelerator ID to set it"


def detect_device(requested: str) -> DeviceInfo:
    """The device to measure: "auto" takes the first GPU torch sees, else the CPU."""
    import torch

    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return DeviceInfo("cpu", "cpu", cpu_model_name())
    if not torch.cuda.is_available():
        raise InvalidInput(f"--device {requested}: torch {torch.__version__} sees no CUDA or ROCm device")
    try:
        wanted = torch.device("cuda" if requested in ("auto", "rocm") else requested.replace("rocm", "cuda"))
        index = torch.cuda.current_device() if wanted.index is None else wanted.index
        name = torch.cuda.get_device_name(index)
    except (RuntimeError, AssertionError) as exc:
        raise InvalidInput(f"--device {requested}: not a device torch can use ({exc})") from exc
    return DeviceInfo(f"cuda:{index}", "rocm" if torch.version.hip else "cuda", name)


def header(
    info: DeviceInfo,
    config: BenchConfig,
    *,
    accelerator_id: str | None,
    started_at: datetime,
    warnings: Sequence[str],
    note: str | None,
) -> dict[str, Any]:
    import torch

    return {
        HEADER_KEY: FORMAT_VERSION,
        "device_name": info.name,
        "accelerator_id": accelerator_id,
        "backend": info.backend,
        "device": info.device,
        "torch_version": torch.__version__,
        "hip_version": torch.version.hip,
        "cuda_version": torch.version.cuda,
        "python_version": platform.python_version(),
        "hostname": socket.gethostname(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "cpu_threads": torch.get_num_threads(),
        "note": note,
        "warnings": list(warnings),
        "config": {**asdict(config), "attention": _ATTENTION, "forward": _FORWARD,
                   "fp32_matmul_precision": torch.get_float32_matmul_precision()},
    }


def supported_precisions(wanted: Sequence[str], device: str) -> tuple[tuple[str, ...], list[str]]:
    """The precisions this device runs natively, and a warning for each it does not."""
    kept, warnings = [], []
    for precision in wanted:
        if (reason := _unsupported(precision, device)) is None:
            kept.append(precision)
        else:
            warnings.append(f"{precision} skipped: {reason}")
    return tuple(kept), warnings


def _dtype(precision: str) -> torch.dtype:
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def _unsupported(precision: str, device: str) -> str | None:
    """Why this device cannot run `precision` matmuls at speed, or None when it can."""
    import torch

    if precision == "bf16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported(False):
        return f"{device} has no native bf16"
    if precision != "fp32" and device == "cpu" and not _cpu_native(precision):
        # torch still runs them, emulated and 10-100x slower than fp32: not a figure worth storing
        return f"this CPU has no native {precision} matmul ({torch.backends.cpu.get_cpu_capability()})"
    try:
        probe = torch.ones(8, 8, dtype=_dtype(precision), device=device)
        torch.mm(probe, probe)
    except RuntimeError as exc:
        return f"{device} does not run {precision} matmuls ({exc})"
    return None


def _cpu_native(precision: str) -> bool:
    import torch

    check = {"bf16": "_is_mkldnn_bf16_supported", "fp16": "_is_mkldnn_fp16_supported"}[precision]
    try:
        return bool(getattr(torch.ops.mkldnn, check)())
    except (AttributeError, RuntimeError):  # a private oneDNN query: assume native when it is gone
        return True


def _synchronizer(device: str) -> Callable[[], None]:
    import torch

    if device.startswith("cuda"):
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


@dataclass(frozen=True, slots=True)
class _BlockWeights:
    """A pre-LayerNorm GPT-2 block: attention (QKV, output projection) then a GELU MLP, with biases."""

    ln1_w: torch.Tensor
    ln1_b: torch.Tensor
    qkv_w: torch.Tensor
    qkv_b: torch.Tensor
    proj_w: torch.Tensor
    proj_b: torch.Tensor
    ln2_w: torch.Tensor
    ln2_b: torch.Tensor
    fc_w: torch.Tensor
    fc_b: torch.Tensor
    out_w: torch.Tensor
    out_b: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def _block_weights(config: BenchConfig, dtype: torch.dtype, device: str) -> _BlockWeights:
    import torch

    h, f = config.hidden, config.ffn_hidden

    def weight(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, device=device) * 0.02).to(dtype).requires_grad_()

    def const(value: float, size: int) -> torch.Tensor:
        return torch.full((size,), value, dtype=dtype, device=device, requires_grad=True)

    return _BlockWeights(const(1, h), const(0, h), weight(3 * h, h), const(0, 3 * h), weight(h, h), const(0, h),
                         const(1, h), const(0, h), weight(f, h), const(0, f), weight(h, f), const(0, h))


def _block_forward(x: torch.Tensor, w: _BlockWeights, heads: int) -> torch.Tensor:
    import torch.nn.functional as F

    b, s, h = x.shape
    y = F.layer_norm(x, (h,), w.ln1_w, w.ln1_b)
    q, k, v = F.linear(y, w.qkv_w, w.qkv_b).view(b, s, 3, heads, h // heads).permute(2, 0, 3, 1, 4).unbind(0)
    attended = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
    x = x + F.linear(attended, w.proj_w, w.proj_b)
    y = F.layer_norm(x, (h,), w.ln2_w, w.ln2_b)
    return x + F.linear(F.gelu(F.linear(y, w.fc_w, w.fc_b), approximate="tanh"), w.out_w, w.out_b)


def measure_block(config: BenchConfig, precision: str, batch: int, device: str, *, backward: bool) -> Measurement:
    """Forward, or forward+backward (input and weight gradients), of one block at one batch size."""
    import torch

    dtype = _dtype(precision)
    w = _block_weights(config, dtype, device)
    x = torch.randn(batch, config.seq_len, config.hidden, dtype=dtype, device=device, requires_grad=True)
    grad_out = torch.randn_like(x)
    inputs = (x, *w.tensors())

    def forward() -> object:
        return _block_forward(x, w, config.heads)

    def forward_backward() -> object:
        return torch.autograd.grad(_block_forward(x, w, config.heads), inputs, grad_outputs=grad_out)

    call = forward_backward if backward else forward
    timing = summarize(time_calls(call, _synchronizer(device), warmup=config.warmup, repeats=config.repeats))
    flops = transformer_block_flops(batch, config.seq_len, config.hidden, config.ffn_hidden, backward=backward)
    return Measurement("block", precision, timing, flops, batch=batch, seq_len=config.seq_len, hidden=config.hidden,
                       heads=config.heads, ffn_hidden=config.ffn_hidden, pass_="fwd+bwd" if backward else "fwd")


def measure_matmul(config: BenchConfig, precision: str, size: int, device: str) -> Measurement:
    """One square (size x size) @ (size x size) product into a preallocated output."""
    import torch

    a, b, out = (torch.randn(size, size, device=device, dtype=_dtype(precision)) for _ in range(3))
    timing = summarize(time_calls(lambda: torch.mm(a, b, out=out), _synchronizer(device),
                                  warmup=config.warmup, repeats=config.repeats))
    return Measurement("matmul", precision, timing, matmul_flops(size, size, size), m=size, n=size, k=size)


def run_all(config: BenchConfig, device: str, out: TextIO, log: Callable[[str], None]) -> list[Measurement]:
    """Every measurement of the config, each written to `out` as one JSON line as soon as it is taken."""
    import torch

    done: list[Measurement] = []
    for label, job in _jobs(config, device):
        try:
            measurement = job()
        except torch.OutOfMemoryError:
            log(f"{label}: skipped, out of device memory")
            continue
        finally:
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        out.write(json.dumps(measurement.to_json()) + "\n")
        out.flush()
        log(describe(measurement))
        done.append(measurement)
    return done


def _jobs(config: BenchConfig, device: str) -> Iterator[tuple[str, Callable[[], Measurement]]]:
    for precision in config.precisions:
        for size in config.matmul_sizes:
            yield f"{precision} matmul {size}^3", partial(measure_matmul, config, precision, size, device)
        for batch in config.batches:
            for backward in (False, True):
                yield (f"{precision} block batch {batch} {'fwd+bwd' if backward else 'fwd'}",
                       partial(measure_block, config, precision, batch, device, backward=backward))


def describe(m: Measurement) -> str:
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


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every value must be positive")
    return values


def _precision_list(text: str) -> tuple[str, ...]:
    values = tuple(part.strip().lower() for part in text.split(","))
    unknown = [v for v in values if v not in BENCH_PRECISIONS]
    if unknown:
        known = ", ".join(BENCH_PRECISIONS)
        raise argparse.ArgumentTypeError(f"unknown precision {', '.join(unknown)} (known: {known})")
    return values


def _positive(text: str) -> int:
    return _int_list(text)[0]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perfledger.microbench",
        description="Time a GPT-2 XL transformer block (fwd, fwd+bwd) and a matmul sweep on this machine's "
        "accelerator; write a JSON-lines result file for `python -m ingest`.",
    )
    parser.add_argument("--tiny", action="store_true", help="a seconds-long CPU-sized configuration (smoke test)")
    parser.add_argument("--out", type=Path, help="result file (default: microbench-HOST-TIME.jsonl here)")
    parser.add_argument("--device", default="auto", help="auto (first GPU, else CPU), cpu, cuda, cuda:N or rocm")
    parser.add_argument("--precisions", type=_precision_list, help="comma list of fp32, fp16, bf16")
    parser.add_argument("--batches", type=_int_list, help="comma list of block batch sizes")
    parser.add_argument("--matmul-sizes", type=_int_list, help="comma list of square matmul sizes")
    parser.add_argument("--repeats", type=_positive, help="timed calls per measurement")
    parser.add_argument("--warmup", type=int, help="untimed calls before timing")
    parser.add_argument("--note", help="free text kept in the result file's header")
    return parser


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    base = TINY if args.tiny else FULL
    chosen = {"precisions": args.precisions, "batches": args.batches, "matmul_sizes": args.matmul_sizes,
              "repeats": args.repeats, "warmup": args.warmup}
    return replace(base, **{k: v for k, v in chosen.items() if v is not None})


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        import torch  # noqa: F401  (optional dependency: checked here, used by the measuring functions)
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        print(f"error: {TORCH_MISSING}", file=sys.stderr)
        return 1
    try:
        return _run(args, config_from_args(args))
    except (PerfledgerError, OSError) as exc:  # OSError: the result file could not be written
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, config: BenchConfig) -> int:
    import torch

    torch.set_float32_matmul_precision("highest")  # fp32 means fp32: no TF32 behind its back
    started = datetime.now(UTC)
    info = detect_device(args.device)
    accelerator_id, warning = resolve_accelerator_id(info.name, info.backend)
    precisions, warnings = supported_precisions(config.precisions, info.device)
    warnings = [w for w in (warning, *warnings) if w]
    if not precisions:
        raise InvalidInput(f"nothing to measure on {info.name}: {'; '.join(warnings)}")
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    config = replace(config, precisions=precisions)
    out_path = args.out or Path(f"microbench-{socket.gethostname()}-{started:%Y%m%dT%H%M%SZ}.jsonl")
    print(f"measuring {info.name} ({info.backend}, {info.device}, accelerator id {accelerator_id}) "
          f"with torch {torch.__version__}", flush=True)
    with out_path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header(info, config, accelerator_id=accelerator_id, started_at=started,
                                    warnings=warnings, note=args.note)) + "\n")
        measurements = run_all(config, info.device, out, lambda line: print(line, flush=True))
    for precision, m in best_matmul(measurements).items():
        print(f"best matmul {precision}: {m.tflops:.3f} TFLOP/s at {m.m}^3")
    print(f"wrote {out_path} ({len(measurements)} measurements); store it with: python -m ingest {out_path}")
    return 0 if measurements else 1
