"""bench/run.py's measuring tools: medians with min and max, child processes with their own peak RSS, the
machine a run was on."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MB = 1_000_000  # throughput in decimal MB/s, like wc and most tools

# ------------------------------------------------------------------------------------------- helpers


def stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def first_value(row: tuple[Any, ...] | None) -> Any:
    """The first column of a row a query must return (a count, an id)."""
    if row is None:
        raise RuntimeError("the query returned no row")
    return row[0]


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return stats(times), out


def machine() -> dict[str, Any]:
    import duckdb
    import polars

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "load_1min": load, "python": platform.python_version(), "duckdb": duckdb.__version__,
            "polars": polars.__version__, "platform": platform.platform()}


def run_child(cmd: list[str]) -> tuple[float, float, int, str]:
    """(seconds, peak RSS MB, exit code, stdout) of one child process, its own rusage only."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if proc.returncode:
            text += err.read().decode(errors="replace")
    return seconds, usage.ru_maxrss / 1024, proc.returncode, text  # ru_maxrss is KiB on Linux


