"""Compiled helpers for ingest's hot loops, built on first use with the machine's C compiler.

As torch.utils.cpp_extension.load does: the C source ships with the code; the shared library is built once per
source, Python version and compiler flags into PERFLEDGER_CACHE_DIR, and imported from there. A machine without
a compiler (the slim Docker image), or PERFLEDGER_NATIVE=0, gets None: callers keep their pure-Polars path,
which is also the definition the compiled one is tested against, so results never depend on which one ran.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shlex
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType

from perfledger.settings import load_settings

SOURCES = Path(__file__).resolve().parent
# -ffp-contract=off: no fused multiply-add, so a product is rounded once on every CPU (exact conversions rely on it)
CFLAGS = ("-O2", "-std=c11", "-fPIC", "-shared", "-ffp-contract=off", "-fno-strict-aliasing")
BUILD_TIMEOUT_S = 120

_unavailable: dict[str, str] = {}  # module name -> why it could not be built or imported


def labeled_scan() -> ModuleType | None:
    """The Megatron-style line scanner (labeled_scan.c), or None where it cannot be had (see why_not)."""
    return _module("labeled_scan")


def mllog_scan() -> ModuleType | None:
    """The MLPerf MLLOG step-event scanner (mllog_scan.c), or None where it cannot be had (see why_not)."""
    return _module("mllog_scan")


def titan_scan() -> ModuleType | None:
    """The torchtitan step-line scanner (titan_scan.c), or None where it cannot be had (see why_not)."""
    return _module("titan_scan")


def clean_ascii() -> ModuleType | None:
    """The plain-ASCII block reader (clean_ascii.c), or None where it cannot be had (see why_not)."""
    return _module("clean_ascii")


def tfrecord_scan() -> ModuleType | None:
    """The TensorBoard event-file record walker (tfrecord_scan.c), or None where it cannot be had (see why_not)."""
    return _module("tfrecord_scan")


def why_not(name: str = "labeled_scan") -> str | None:
    """Why a compiled helper is not in use, in plain words; None when it is (or was not asked for yet)."""
    return _unavailable.get(name)


@functools.cache
def _module(name: str) -> ModuleType | None:
    settings = load_settings()
    if not settings.native:
        _unavailable[name] = "PERFLEDGER_NATIVE=0"
        return None
    source = SOURCES / f"{name}.c"
    target = settings.cache_dir / f"{name}-{_build_key(source)}{sysconfig.get_config_var('EXT_SUFFIX')}"
    try:
        if not target.exists():
            _build(source, target)
        module = _import(name, target)
    except (OSError, ImportError, subprocess.SubprocessError) as exc:
        _unavailable[name] = f"could not build or load {source.name}: {_short(exc)}"
        return None
    _unavailable.pop(name, None)
    return module


def _build_key(source: Path) -> str:
    digest = hashlib.sha256(source.read_bytes())
    for header in sorted(SOURCES.glob("*.h")):  # what a source includes: a changed header rebuilds it
        digest.update(header.read_bytes())
    digest.update(" ".join((*_compiler(), *CFLAGS, sysconfig.get_paths()["include"])).encode())
    return digest.hexdigest()[:16]


def _compiler() -> list[str]:
    return shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")


def _build(source: Path, target: Path) -> None:
    """Compile into a file of this process's own, then rename: two processes building at once both succeed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [*_compiler(), *CFLAGS, f"-I{sysconfig.get_paths()['include']}", str(source), "-o", str(partial)]
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _import(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{__name__}.{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _short(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        lines = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"the compiler exited with {exc.returncode}"
    return str(exc) or type(exc).__name__
