"""Which parser reads a file: decided by content (the first 64 KiB of clean text), never by file name alone.

Parsers are tried in ingest.parsers.ORDER; the first whose sniff() says yes wins. Some logs open with 64 KiB of
shell trace or environment dump before their framework says a word (a bigscience Megatron job's `module load`
trace); `detect_file` looks again at a wider head (1 MiB) before giving up.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import BinaryIO

import polars as pl

from ingest.parsers import registry
from ingest.parsers._common import concat_steps
from ingest.parsers.base import LogParser
from ingest.text import HEAD_BYTES, clean_text, decode, head_text, iter_line_chunks
from perfledger.errors import UnknownFormat
from perfledger.records import ParseSummary
from perfledger.vocabulary import LogFormat

WIDE_HEAD_BYTES = 1024 * 1024


def detect_format(head: str, *, file_name: str) -> type[LogParser]:
    """The parser class for a file whose first bytes (as clean text) are `head`; UnknownFormat if none."""
    for parser in registry():
        if parser.sniff(head, file_name):
            return parser
    known = ", ".join(fmt.value for fmt in LogFormat)
    raise UnknownFormat(file_name, None, f"not a log format perfledger reads (known: {known})")


def detect_head(raw: bytes, *, file_name: str) -> type[LogParser]:
    """detect_format on the first 64 KiB of `raw`, then on all of it (up to 1 MiB) if that said nothing."""
    try:
        return detect_format(head_text(raw[:HEAD_BYTES]), file_name=file_name)
    except UnknownFormat:
        if len(raw) <= HEAD_BYTES:
            raise
        return detect_format(clean_text(decode(raw[:WIDE_HEAD_BYTES])), file_name=file_name)


def detect_file(path: Path) -> type[LogParser]:
    with _open(path) as stream:
        return detect_head(stream.read(WIDE_HEAD_BYTES), file_name=path.name)


def parse_file(path: Path) -> tuple[ParseSummary, pl.DataFrame]:
    """Detect, then parse the whole file: (summary, all steps). A convenience for tests and scripts."""
    parser = detect_file(path)(path.name)
    with _open(path) as stream:
        frames = [parser.feed(lines, first) for first, lines in iter_line_chunks(stream)]
    summary = parser.finish()
    return summary, concat_steps(frames)


def _open(path: Path) -> BinaryIO:
    with path.open("rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else path.open("rb")  # type: ignore[return-value]
