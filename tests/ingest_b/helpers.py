"""Feed a fixture through one parser the way the pipeline does: clean line chunks, then finish()."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ingest.parsers.base import LogParser
from ingest.text import iter_line_chunks
from perfledger.records import ParseSummary

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def parse_with(parser_cls: type[LogParser], path: Path, *, chunk_bytes: int = 64 * 1024) -> tuple[ParseSummary, pl.DataFrame]:
    parser = parser_cls(path.name)
    frames = []
    with path.open("rb") as stream:
        for first_lineno, lines in iter_line_chunks(stream, chunk_bytes=chunk_bytes):
            frames.append(parser.feed(lines, first_lineno))
    summary = parser.finish()
    steps = pl.concat(frames) if frames else pl.DataFrame()
    return summary, steps


def parse_text(parser_cls: type[LogParser], text: str, file_name: str = "input.txt") -> tuple[ParseSummary, pl.DataFrame]:
    parser = parser_cls(file_name)
    lines = text.split("\n")
    frame = parser.feed(lines, 1)
    return parser.finish(), frame
