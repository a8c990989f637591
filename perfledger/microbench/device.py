"""The device a micro-benchmark runs on: which one, its name and catalog id, and the precisions it runs.

torch is imported inside the functions, never at module level, so this module imports without torch.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfledger.catalog import resolve_accelerator
from perfledger.errors import InvalidInput, UnknownId
from perfledger.microbench.records import DeviceInfo

if TYPE_CHECKING:
    import torch  # type: ignore[import-not-found, unused-ignore]


def cpu_model_from_cpuinfo(text: str) -> str | None:
    """The first "model name" of /proc/cpuinfo text, or None when it has none (e.g. some ARM kernels)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def cpu_model_name() -> str:
    """This machine's CPU as /proc/cpuinfo or, failing that, the platform names it."""
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
        return resolve_accelerator(device_name), None
    except UnknownId as exc:
        return None, f"accelerator id left empty: {exc}; ingest with --accelerator ID to set it"


def detect_device(requested: str) -> DeviceInfo:
    """The device to measure: "auto" takes the first GPU torch sees, else the CPU."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
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


def supported_precisions(wanted: Sequence[str], device: str) -> tuple[tuple[str, ...], list[str]]:
    """The precisions this device runs natively, and a warning for each it does not."""
    kept, warnings = [], []
    for precision in wanted:
        if (reason := _unsupported(precision, device)) is None:
            kept.append(precision)
        else:
            warnings.append(f"{precision} skipped: {reason}")
    return tuple(kept), warnings


def torch_dtype(precision: str) -> torch.dtype:
    """The torch dtype of a benchmark precision: fp32, fp16 or bf16."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def synchronizer(device: str) -> Callable[[], None]:
    """A call that waits until the device has finished its queued work (nothing to wait for on a CPU)."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    if device.startswith("cuda"):
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _unsupported(precision: str, device: str) -> str | None:
    """Why this device cannot run `precision` matmuls at speed, or None when it can."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    if precision == "bf16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported(False):
        return f"{device} has no native bf16"
    if precision != "fp32" and device == "cpu" and not _cpu_native(precision):
        # torch still runs them, emulated and 10-100x slower than fp32: not a figure worth storing
        return f"this CPU has no native {precision} matmul ({torch.backends.cpu.get_cpu_capability()})"
    try:
        probe = torch.ones(8, 8, dtype=torch_dtype(precision), device=device)
        torch.mm(probe, probe)
    except RuntimeError as exc:
        return f"{device} does not run {precision} matmuls ({exc})"
    return None


def _cpu_native(precision: str) -> bool:
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    check = {"bf16": "_is_mkldnn_bf16_supported", "fp16": "_is_mkldnn_fp16_supported"}[precision]
    try:
        return bool(getattr(torch.ops.mkldnn, check)())
    except (AttributeError, RuntimeError):  # a private oneDNN query: assume native when it is gone
        return True
