"""Plain-Python baselines: a regex loop per format extracting the same step fields as our parsers.

No Polars, no store: read lines, pick the step lines with a substring test, one re.search per field. This is
the floor a "just write a loop" parser would reach; the ingest must be at least 2x faster on the Megatron log.
"""

from __future__ import annotations

import csv
import json
import re
import struct
import sys
import time
from pathlib import Path

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[nN][aA][nN]|[iI][nN][fF])"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]")

_MEGATRON = [re.compile(p) for p in (
    r"iteration\s+(\d+)\s*/\s*\d+\s*\|",
    rf"elapsed time per iteration \(ms\):\s*({NUM})",
    rf"learning rate:\s*({NUM})\s*\|",
    r"global batch size:\s*(\d+)\s*\|",
    rf"lm[ -]loss:\s*({NUM})\s*\|",
    rf"grad norm:\s*({NUM})\s*\|",
    rf"throughput per GPU \(TFLOP/s/GPU\):\s*({NUM})",
    r"consumed samples:\s*(\d+)\s*\|",
    r"number of skipped iterations:\s*(\d+)\s*\|",
    r"number of nan iterations:\s*(\d+)\s*\|",
)]
_TITAN = [re.compile(p) for p in (
    r"step:\s*(\d+)", rf"loss:\s*({NUM})", rf"grad_norm:\s*({NUM})", rf"memory:\s*({NUM})GiB",
    r"tps:\s*([\d,]+)", rf"tflops:\s*({NUM})", rf"mfu:\s*({NUM})%",
)]


def _num(m: re.Match[str] | None) -> float | None:
    return float(m.group(1).replace(",", "")) if m else None


def megatron(path: Path) -> int:
    rows = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if "iteration " in line and "elapsed time per iteration" in line:
                rows.append([_num(rx.search(line)) for rx in _MEGATRON])
    return len(rows)


def torchtitan(path: Path) -> int:
    rows = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if "step:" in line and "validate" not in line:
                if "\x1b" in line:
                    line = _ANSI.sub("", line)
                rows.append([_num(rx.search(line)) for rx in _TITAN])
    return len(rows)


def mlperf(path: Path) -> int:
    rows = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            at = line.find(":::MLLOG ")
            if at < 0:
                continue
            event = json.loads(line[at + 9:])
            if event.get("key") == "tracked_stats":
                meta = event.get("metadata") or {}
                rows.append((meta.get("step"), event.get("time_ms"), event.get("value")))
    return len(rows)


_WANDB_FIELDS = ("_step", "_runtime", "train/step", "train/global_step", "train/loss", "train/lr",
                 "train/learning_rate", "train/grad_norm", "throughput/batches_per_sec",
                 "throughput/device/tokens_per_sec", "throughput/device/mfu", "time/token", "time/sample")
_COMPOSER_ITEM = re.compile(rf"Train (\S+): ({NUM})\s*$")
_COMPOSER_BATCH = re.compile(r"\[batch=(\d+)")
_COMPOSER_FIELDS = frozenset({"loss/train/total", "throughput/batches_per_sec", "throughput/device/tokens_per_sec",
                              "throughput/device/mfu", "time/train", "time/token", "time/sample",
                              "memory/peak_reserved_mem", "l2_norm/grad/global", "lr-DecoupledAdamW/group0"})


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def wandb_history(path: Path) -> int:
    rows = []
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        wanted = [i for i, name in enumerate(header) if name in _WANDB_FIELDS]
        for fields in reader:
            if len(fields) == len(header):
                rows.append([_float(fields[i]) for i in wanted])
    return len(rows)


def composer(path: Path) -> int:
    rows: list[dict[str, float]] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if "[batch=" in line and (m := _COMPOSER_BATCH.search(line)):
                rows.append({"batch": float(m.group(1))})
            elif "Train " in line and rows and (m := _COMPOSER_ITEM.search(line)) and m.group(1) in _COMPOSER_FIELDS:
                rows[-1][m.group(1)] = float(m.group(2))
    return len(rows)




def tensorboard(path: Path) -> int:
    """A TensorBoard event file has no lines: the plain loop reads each record's length, decodes every Event with
    the tensorboard package's protobuf and keeps the Megatron step tags' scalars (no checksum checked; the
    package's own reader, EventFileLoader, checks them in pure Python and runs at about 0.4 MB/s)."""
    from tensorboard.compat.proto import event_pb2

    tags = {"iteration-time", "lm loss", "learning-rate", "grad-norm", "throughput", "batch-size",
            "mem-max-allocated-bytes"}
    steps: dict[int, dict[str, float]] = {}
    with path.open("rb") as f:
        while header := f.read(12):
            (length,) = struct.unpack("<Q", header[:8])
            event = event_pb2.Event.FromString(f.read(length + 4)[:length])
            for value in event.summary.value:
                if value.tag in tags:
                    steps.setdefault(event.step, {})[value.tag] = value.simple_value
    return len(steps)


LOOPS = {"megatron": megatron, "torchtitan": torchtitan, "mlperf": mlperf, "wandb_history": wandb_history,
         "composer": composer, "tensorboard": tensorboard}

if __name__ == "__main__":  # python bench/baselines.py FORMAT FILE -> {"rows": found, "seconds": the loop's time}
    start = time.perf_counter()
    found = LOOPS[sys.argv[1]](Path(sys.argv[2]))
    print(json.dumps({"rows": found, "seconds": time.perf_counter() - start}))
