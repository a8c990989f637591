"""The command line of `python -m perfledger.microbench`: arguments, the result file's header, the run.

The measuring lives beside it: records.py (config, timings, measurements), device.py (which device, its
catalog id, the precisions it runs), kernels.py (the timed block and matmul). torch is imported only once a
benchmark runs, so this module (and the parser that reads its files) imports on a machine without torch.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfledger.errors import InvalidInput, PerfledgerError
from perfledger.microbench import FORMAT_VERSION, HEADER_KEY, TORCH_MISSING
from perfledger.microbench.device import detect_device, resolve_accelerator_id, supported_precisions
from perfledger.microbench.kernels import ATTENTION, FORWARD, run_all
from perfledger.microbench.records import BENCH_PRECISIONS, FULL, TINY, BenchConfig, DeviceInfo, best_matmul

# resolve_accelerator_id: ingest's result-file parser resolves a device name the catalog learnt later with it.
__all__ = ["build_parser", "config_from_args", "header", "main", "resolve_accelerator_id"]


def header(
    info: DeviceInfo,
    config: BenchConfig,
    *,
    accelerator_id: str | None,
    started_at: datetime,
    warnings: Sequence[str],
    note: str | None,
) -> dict[str, Any]:
    """The result file's first line: format version, device, software versions, host and the config."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch  # type: ignore[import-not-found, unused-ignore]

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
        "config": {**asdict(config), "attention": ATTENTION, "forward": FORWARD,
                   "fp32_matmul_precision": torch.get_float32_matmul_precision()},
    }


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
    """The arguments of `python -m perfledger.microbench`."""
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
    """The full or tiny configuration, with what the arguments override."""
    base = TINY if args.tiny else FULL
    chosen = {"precisions": args.precisions, "batches": args.batches, "matmul_sizes": args.matmul_sizes,
              "repeats": args.repeats, "warmup": args.warmup}
    return replace(base, **{k: v for k, v in chosen.items() if v is not None})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when something was measured, 1 on an error (printed as one line), 2 on usage."""
    args = build_parser().parse_args(argv)
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]  # noqa: F401  (optional: checked here)
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
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch  # type: ignore[import-not-found, unused-ignore]

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
