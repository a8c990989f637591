"""Mutations of the real fixture logs, for the fuzz test and bench/fuzz.py: byte flips, duplicated, dropped and cut
lines, numbers replaced by values past every range (1e309, 400 digits, nan, -inf, 2**63, 2e19), JSON nested
50,000 deep and lines of 100K-300K characters. One case: detect, parse, check; the outcome is one of OUTCOMES: a case parses only if no step value is infinite and none but
a loss is NaN, and no result is NaN or infinite."""

from __future__ import annotations

import io
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ingest.detect import detect_head
from ingest.parsers._common import concat_steps
from ingest.parsers.base import step_frames
from perfledger.errors import ParseError
from perfledger.records import ParseSummary

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
PARSED, REFUSED, CRASHED, BAD_VALUE = "parsed", "refused with file:line", "crashed", "stored a non-finite value"
OUTCOMES = (PARSED, REFUSED, CRASHED, BAD_VALUE)
HEAD_LINES, TAIL_LINES = 150, 40  # a line log is cut to its head and tail: every kind of line, fast to parse
MAX_JSON_FIXTURE_BYTES = 256 * 1024
CASE_CHUNK_BYTES = 64 * 1024  # several chunks per case, so chunk boundaries are crossed too
HOSTILE_NUMBERS = ("1e309", "-1e309", "9" * 400, "nan", "NaN", "-inf", "inf", "Infinity", str(2**63), str(2**64),
                   "2e19", str(2**31), "-" + str(2**63 + 1), "1e-400", "0")
NAN_ALLOWED = frozenset({"loss"})  # a diverged run's loss stays NaN (counted and warned); nothing else may be NaN
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True, slots=True)
class Case:
    format: str
    name: str
    mutation: str
    raw: bytes


@dataclass(frozen=True, slots=True)
class Result:
    outcome: str
    detail: str = ""


def corpus() -> dict[str, list[tuple[str, bytes]]]:
    """Every real fixture log by its format, line logs cut to head and tail."""
    out: dict[str, list[tuple[str, bytes]]] = {}
    for path in sorted(LOGS.iterdir()):
        if path.name.endswith((".expected.json", ".md")):
            continue
        raw = path.read_bytes()
        if _is_json(raw) and len(raw) > MAX_JSON_FIXTURE_BYTES:
            continue  # a whole document cannot be cut; its format has a smaller fixture
        parser = detect_head(raw, file_name=path.name)
        fmt = parser.format.value
        if not _is_json(raw) and not parser.reads_bytes:  # a binary file is mutated whole
            lines = raw.split(b"\n")
            if len(lines) > HEAD_LINES + TAIL_LINES:
                raw = b"\n".join(lines[:HEAD_LINES] + lines[-TAIL_LINES:])
        out.setdefault(fmt, []).append((path.name, raw))
    return out


def _is_json(raw: bytes) -> bool:
    return raw.lstrip()[:1] in (b"{", b"[")


def _lines(raw: bytes) -> list[bytes]:
    return raw.split(b"\n")


def flip_bytes(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 16)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def duplicate_line(raw: bytes, rng: random.Random) -> bytes:
    lines = _lines(raw)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + [lines[i]] * rng.randint(2, 50) + lines[i + 1:])


def drop_lines(raw: bytes, rng: random.Random) -> bytes:
    lines = _lines(raw)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + lines[i + rng.randint(1, 20):])


def cut_short(raw: bytes, rng: random.Random) -> bytes:
    if len(raw) < 2:  # an earlier mutation can leave one byte: nothing shorter but empty
        return b""
    return raw[: rng.randrange(1, len(raw))]


def cut_line(raw: bytes, rng: random.Random) -> bytes:
    lines = _lines(raw)
    i = rng.randrange(len(lines))
    lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return b"\n".join(lines)


def hostile_numbers(raw: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in _NUMBER.finditer(raw)]
    if not spans:
        return raw + rng.choice(HOSTILE_NUMBERS).encode()
    chosen = sorted(rng.sample(spans, min(len(spans), rng.choice((1, 3, 20, 200)))))
    parts, at = [], 0
    for start, end in chosen:
        parts += [raw[at:start], rng.choice(HOSTILE_NUMBERS).encode()]
        at = end
    return b"".join([*parts, raw[at:]])


def deep_nesting(raw: bytes, rng: random.Random) -> bytes:
    depth = rng.choice((1_000, 50_000))
    opener, closer = rng.choice(((b"[", b"]"), (b'{"a":', b"}")))
    nested = opener * depth + b"1" + closer * depth
    spots = [m.end() for m in re.finditer(rb'": ?', raw)]
    if spots:
        at = rng.choice(spots)
        end = re.compile(rb"[,}\]\n]").search(raw, at)
        return raw[:at] + nested + raw[end.start() if end else len(raw):]
    lines = _lines(raw)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + [lines[i][:40] + nested] + lines[i + 1:])


def huge_line(raw: bytes, rng: random.Random) -> bytes:
    lines = _lines(raw)
    i = rng.randrange(len(lines))
    seed = lines[i] or b"x"
    size = rng.choice((100_000, 300_000))
    return b"\n".join(lines[:i] + [(seed * (size // len(seed) + 1))[:size]] + lines[i:])


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "flip_bytes": flip_bytes, "duplicate_line": duplicate_line, "drop_lines": drop_lines, "cut_short": cut_short,
    "cut_line": cut_line, "hostile_numbers": hostile_numbers, "deep_nesting": deep_nesting, "huge_line": huge_line,
}
WEIGHTS = {"flip_bytes": 3, "duplicate_line": 2, "drop_lines": 1, "cut_short": 1, "cut_line": 1,
           "hostile_numbers": 6, "deep_nesting": 1, "huge_line": 1}


def cases(seed: int, per_format: int, corpus_by_format: dict[str, list[tuple[str, bytes]]]) -> Iterator[Case]:
    """per_format mutated cases of each format's fixtures in turn, the same for the same seed; a case may stack
    two mutations. Made one at a time: a long run holds one case in memory."""
    rng = random.Random(seed)
    names, weights = list(WEIGHTS), list(WEIGHTS.values())
    formats = sorted(corpus_by_format)
    for _ in range(per_format):
        for fmt in formats:
            name, raw = rng.choice(corpus_by_format[fmt])
            applied = rng.choices(names, weights, k=rng.choice((1, 1, 1, 2)))
            for mutation in applied:
                raw = MUTATIONS[mutation](raw, rng) if raw else raw
            yield Case(fmt, name, "+".join(applied), raw)


def run_case(case: Case) -> Result:
    """Detect and parse the case as the pipeline does; PARSED only with finite values (see NAN_ALLOWED)."""
    try:
        summary, steps = _parse(case.raw, case.name)
    except ParseError as exc:
        if exc.file_name != case.name or not str(exc).startswith(case.name):
            return Result(CRASHED, f"ParseError without the file name: {exc}")
        return Result(REFUSED)
    except Exception as exc:  # noqa: BLE001 - the outcome under test
        return Result(CRASHED, f"{type(exc).__name__}: {str(exc)[:200]}")
    floats = [name for name, dtype in steps.schema.items() if dtype.is_float()]
    bad = [name for name in floats if steps[name].is_infinite().any()
           or (name not in NAN_ALLOWED and steps[name].is_nan().any())]
    bad += [f"result {r.metric}" for r in summary.results
            if r.value is not None and not math.isfinite(r.value)]  # None: a cell kept as printed
    return Result(BAD_VALUE, ", ".join(bad)) if bad else Result(PARSED)


def _parse(raw: bytes, name: str) -> tuple[ParseSummary, pl.DataFrame]:
    if not raw.strip():
        raise ParseError(name, None, "the file is empty")
    parser = detect_head(raw[: 1024 * 1024], file_name=name)(name)
    frames = list(step_frames(parser, io.BytesIO(raw), chunk_bytes=CASE_CHUNK_BYTES))
    summary = parser.finish()
    return summary, concat_steps([*frames, parser.final_steps()])


def describe(case: Case, result: Result) -> str:
    return json.dumps({"format": case.format, "file": case.name, "mutation": case.mutation,
                       "outcome": result.outcome, "detail": result.detail})
