"""Long hostile lines for each format, built from a real fixture of that format (shared by the timing tests)."""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path

from ingest.detect import detect_file
from ingest.parsers import registry
from ingest.parsers.base import LogParser
from perfledger.errors import PerfledgerError
from tests.conftest import LOGS


@cache
def fixture_by_format() -> dict[str, Path]:
    """One real fixture log per line format (the smallest), detected as that format."""
    found: dict[str, Path] = {}
    for path in sorted(LOGS.iterdir(), key=lambda p: p.stat().st_size):
        if path.name.endswith((".expected.json", ".md")):
            continue
        try:
            parser = detect_file(path)
        except PerfledgerError:
            continue
        if not parser.reads_bytes:  # a binary format has no lines
            found.setdefault(parser.format.value, path)
    return found


def parser_for(fmt: str) -> type[LogParser]:
    return next(p for p in registry() if p.format.value == fmt)


FILLERS = ("1", " ", "a ", "a : ", ". ", "1/", "x .. ", "| ", "{'loss': ", ") = ", "GPU 0: ", "using world size: 8 ")


def hostile_lines(path: Path, length: int, *, prefixes: int = 60) -> list[str]:
    """Lines of `length` characters: each distinct line of the file (the first `prefixes`) followed by a filler
    repeated, and each line repeated: what a regex with overlapping unbounded quantifiers chokes on."""
    lines = path.read_text(errors="replace").splitlines()
    seen = list(dict.fromkeys(line for line in lines if line.strip()))[:prefixes]
    out = [(line * (length // len(line) + 1))[:length] for line in seen]
    for line in seen:
        for filler in FILLERS:
            out.append((line + filler * (length // len(filler) + 1))[:length])
    return out


def primed(parser_cls: type[LogParser], path: Path) -> tuple[LogParser, int]:
    """A parser that has read the fixture (so it is in the state a real log leaves it in), and the next line number."""
    lines = path.read_text(errors="replace").splitlines()
    parser = parser_cls(path.name)
    parser.feed(lines, 1)
    return parser, len(lines) + 1


def seconds_to_feed(parser: LogParser, lineno: int, long_line: str) -> float:
    start = time.perf_counter()
    parser.feed([long_line], lineno)
    return time.perf_counter() - start
