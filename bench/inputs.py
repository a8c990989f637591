"""Benchmark inputs, built at run time from the real fixtures in tests/fixtures/logs (never committed).

A TensorBoard event file is built the same way from its records (build_events): the records before the first
step are the head, the rest the body, each copy's Events re-framed with their steps advanced.

A fixture is split into head (lines before its first step line), body (first to last step line) and tail.
The body is repeated until the file reaches the wanted size, each copy with its step numbers (and the
counters that go with them: consumed samples/tokens, MLPerf time_ms) advanced past the previous copy, so the
parser sees one long, monotonic run rather than duplicates.
"""

from __future__ import annotations

import itertools
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs"


@dataclass(frozen=True)
class Spec:
    fixture: str
    step_line: str  # a regex that marks a step line (head/body/tail split)
    counters: tuple[str, ...]  # regexes whose group 1 is a number to advance in each copy


SPECS: dict[str, Spec] = {
    "megatron": Spec(
        "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out",
        r"\] iteration\s+\d+/",
        (r"iteration\s+(\d+)/", r"consumed samples:\s*(\d+)", r"consumed tokens:\s*(\d+)"),
    ),
    "torchtitan": Spec(
        "qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log",
        r"step:\s*\d+",
        (r"step:\s*(\d+)",),
    ),
    "mlperf": Spec(
        "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt",
        r'"key": "tracked_stats"',
        (r'"step": (\d+(?:\.\d+)?)', r'"time_ms": (\d+)', r'"samples_count": (\d+(?:\.\d+)?)'),
    ),
    "wandb_history": Spec(  # index, _step, _runtime, _timestamp and train/step (13th field) advance
        "oraby8_tts_grpo_wandb_history.csv",
        r"^\d+,\d+,",
        (r"^(\d+),", r"^\d+,(\d+),", r"^\d+,\d+,([\d.]+),", r"^(?:[^,]*,){4}([\d.]+),",
         r"^(?:[^,]*,){12}([\d.]+),"),
    ),
    "composer": Spec(
        "helios113_dyna_composer_h100nvl_console.log",
        r"\[batch=\d+/\d+\]:",
        (r"\[batch=(\d+)/", r"Train time/batch: (\d+)", r"time/batch_in_epoch: (\d+)", r"Train time/sample: (\d+)",
         r"time/sample_in_epoch: (\d+)", r"Train time/token: (\d+)", r"time/token_in_epoch: (\d+)",
         r"Train time/train: ([\d.]+)", r"Train time/total: ([\d.]+)"),
    ),
}


class _Template:
    """One body line cut at its counters: pieces[0] n0 pieces[1] n1 ... pieces[-1]."""

    __slots__ = ("float_fmt", "kinds", "pieces", "values")

    def __init__(self, line: str, patterns: list[re.Pattern[str]]) -> None:
        spans = []
        for kind, rx in enumerate(patterns):
            spans += [(m.start(1), m.end(1), kind) for m in rx.finditer(line)]
        spans.sort()
        self.pieces, self.values, self.kinds, self.float_fmt = [], [], [], []
        pos = 0
        for a, b, kind in spans:
            self.pieces.append(line[pos:a])
            text = line[a:b]
            self.values.append(float(text))
            self.kinds.append(kind)
            self.float_fmt.append("." in text)
            pos = b
        self.pieces.append(line[pos:])

    def render(self, offsets: list[float]) -> str:
        if not self.values:
            return self.pieces[0]
        out = [self.pieces[0]]
        for i, v in enumerate(self.values):
            n = v + offsets[self.kinds[i]]
            out.append(repr(n) if self.float_fmt[i] else str(int(n)))
            out.append(self.pieces[i + 1])
        return "".join(out)


def _split(fmt: str) -> tuple[list[str], list[str], list[str], Spec]:
    spec = SPECS[fmt]
    lines = (FIXTURES / spec.fixture).read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    marker = re.compile(spec.step_line)
    hits = [i for i, line in enumerate(lines) if marker.search(line)]
    first, last = hits[0], hits[-1]
    return lines[:first], lines[first : last + 1], lines[last + 1 :], spec


def _spans(body: list[str], spec: Spec) -> list[float]:
    """How far each counter moves across one body copy (max - min + its typical increment)."""
    spans = []
    for rx in (re.compile(p) for p in spec.counters):
        values = [float(m.group(1)) for line in body for m in rx.finditer(line)]
        if not values:
            spans.append(0.0)
            continue
        distinct = sorted(set(values))
        step = min((b - a for a, b in itertools.pairwise(distinct) if b > a), default=1.0)
        spans.append(max(values) - min(values) + step)
    return spans


def iter_text(fmt: str, size: int) -> Iterator[str]:
    """The text of a `fmt` log of about `size` bytes (at least one full body copy), in pieces."""
    head, body, tail, spec = _split(fmt)
    patterns = [re.compile(p) for p in spec.counters]
    templates = [_Template(line, patterns) for line in body]
    spans = _spans(body, spec)
    fixed = sum(len(s.encode()) for s in head + tail)
    per_copy = max(1, sum(len(s.encode()) for s in body))
    copies = max(1, -(-(size - fixed) // per_copy))
    yield "".join(head)
    for k in range(copies):
        offsets = [k * s for s in spans]
        yield "".join(t.render(offsets) for t in templates)
    yield "".join(tail)


EVENTS_FIXTURE = "cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0"


def _event_records(raw: bytes) -> list[bytes]:
    records, at = [], 0
    while at + 12 <= len(raw):
        (length,) = struct.unpack_from("<Q", raw, at)
        records.append(raw[at + 12 : at + 12 + length])
        at += 16 + length
    return records


def _framed(payload: bytes) -> bytes:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc32c(length)) + payload + struct.pack("<I", masked_crc32c(payload))


def build_events(size: int, path: Path) -> int:
    """A Megatron TensorBoard event file of about `size` bytes: the fixture's step records repeated, each copy's
    steps advanced past the previous copy's (the `... vs samples` tags by samples)."""
    from tensorboard.compat.proto import event_pb2

    events = [event_pb2.Event.FromString(r) for r in _event_records((FIXTURES / EVENTS_FIXTURE).read_bytes())]
    first = next(i for i, e in enumerate(events) if e.step > 0)
    head, body = events[:first], events[first:]
    iterations = max(e.step for e in body if not any(v.tag.endswith("vs samples") for v in e.summary.value))
    samples = max(e.step for e in body)
    with path.open("wb") as out:
        written = sum(out.write(_framed(e.SerializeToString())) for e in head)
        copy = 0
        while written < size:
            for e in body:
                shifted = event_pb2.Event()
                shifted.CopyFrom(e)
                by_samples = any(v.tag.endswith("vs samples") for v in e.summary.value)
                shifted.step = e.step + copy * (samples if by_samples else iterations)
                written += out.write(_framed(shifted.SerializeToString()))
            copy += 1
    return path.stat().st_size


def build(fmt: str, size: int, path: Path) -> int:
    """Write the log to `path`; returns its size in bytes."""
    if fmt == "tensorboard":
        return build_events(size, path)
    with path.open("w", encoding="utf-8", newline="") as out:
        for piece in iter_text(fmt, size):
            out.write(piece)
    return path.stat().st_size
