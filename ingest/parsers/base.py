"""The contract every parser keeps: text in, typed records out, no database, bounded memory.

A parser is fed the file's lines in chunks (already decoded, colour codes and carriage-return progress
frames removed by ingest/text.py) and returns the steps it found in that chunk as a frame with
perfledger.records.STEP_SCHEMA. `finish()` returns everything else it learnt (configuration, line
problems, warnings, non-step results). The pipeline decides what to store and in which transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import polars as pl

from ingest.text import TextChunk
from perfledger.records import LineProblem, ParseSummary
from perfledger.vocabulary import LogFormat

MAX_PROBLEMS_KEPT = 200  # problems beyond this are counted, not kept, so memory stays bounded


class LogParser(ABC):
    format: ClassVar[LogFormat]
    chunk_bytes: ClassVar[int | None] = None  # None: ingest.text.CHUNK_BYTES

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.problems: list[LineProblem] = []
        self.skipped_lines = 0

    @abstractmethod
    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        """Parse one chunk; lines[i] is line number first_lineno + i. Returns the chunk's steps."""

    def prepare(self, lines: Sequence[str], first_lineno: int) -> Any:
        """The part of feed() that reads no parser state, so the pipeline can run it for several chunks at once on
        its reader threads (Polars releases the GIL); feed_prepared then runs in order, one chunk at a time.
        feed(lines, n) == feed_prepared(prepare(lines, n))."""
        return lines, first_lineno

    def prepare_chunk(self, chunk: TextChunk) -> Any:
        """prepare() for a chunk as the pipeline reads it, for a parser that uses what the chunk knows at no cost
        (Megatron: chunk.text.isascii())."""
        return self.prepare(chunk.lines(), chunk.first_lineno)

    def feed_prepared(self, prepared: Any) -> pl.DataFrame:
        return self.feed(*prepared)

    @abstractmethod
    def finish(self) -> ParseSummary:
        """Called once after the last chunk. Raises ParseError when the file held nothing usable."""

    def problem(self, line: int | None, reason: str) -> None:
        self.skipped_lines += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(LineProblem(self.file_name, line, reason))
