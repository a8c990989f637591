"""The contract every parser keeps: text in, typed records out, no database, bounded memory.

A parser of a binary format (TensorBoard events) sets `reads_bytes`: detection asks its `sniff_bytes` first, and it
is fed the whole decompressed stream (`feed_stream`) instead of decoded lines; its line numbers are record numbers.

A parser is fed the file's lines in chunks (already decoded, colour codes and carriage-return progress
frames removed by ingest/text.py) and returns the steps it found in that chunk as a frame with
perfledger.records.STEP_SCHEMA. `finish()` returns everything else it learnt (configuration, line
problems, warnings, non-step results). The pipeline decides what to store and in which transaction.

When the run ran is read from the log's own clock: a parser that meets a time (MLPerf's `time_ms`, a TensorBoard
event's wall time, a record's timestamp) calls `saw_time`; the pipeline also gives it the first date printed in the
file's head (`date_in_text`). `started_at` is the earliest of them, or None when the log printed no date.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, BinaryIO, ClassVar

import polars as pl

from ingest.text import TextChunk, iter_text_chunks
from perfledger.records import LineProblem, ParseSummary, empty_steps, problem_kind
from perfledger.vocabulary import LogFormat

HEAD_CHARS = 1024 * 1024  # what look() is given of a file's start (as much as detection reads)
MAX_PROBLEMS_KEPT = 200  # problems beyond this are counted by kind (left_out), not kept, so memory stays bounded
# A line longer than this is skipped (counted) by the parsers that read lines in Python: no log line that carries a
# figure is this long, and a regex's work on one line must stay small whatever the pattern.
MAX_PARSED_LINE_CHARS = 64 * 1024
# A printed date and time: "2025-06-12 00:02:13", "[2024-05-14T10:11:12"; read as UTC when no zone is printed.
# No lookbehind: a pattern that starts with a literal is searched for that literal first (a lookbehind made the
# search try every position: 32-177 ms on a 1 MiB head, against 1-5 ms); a digit before it is checked by hand.
_PRINTED_DATE = re.compile(r"(20\d\d)-([01]\d)-([0-3]\d)[ T]([0-2]\d):([0-5]\d):([0-5]\d)")
# Epoch seconds outside these years are not a run's date (a counter, a clock since boot).
_PLAUSIBLE_EPOCH_S = (datetime(2000, 1, 1, tzinfo=UTC).timestamp(), datetime(2100, 1, 1, tzinfo=UTC).timestamp())


def date_in_text(text: str) -> datetime | None:
    """The first date and time printed in `text` (UTC when no zone is printed), or None.

    >>> date_in_text("[NeMo W 2025-06-12 00:00:11 nemo_logging:405] ...")
    datetime.datetime(2025, 6, 12, 0, 0, 11, tzinfo=datetime.timezone.utc)
    """
    at = 0
    while (m := _PRINTED_DATE.search(text, at)) is not None:
        at = m.start() + 1
        if m.start() and text[m.start() - 1].isdecimal():  # part of a longer number
            continue
        try:
            year, month, day, hour, minute, second = map(int, m.groups())
            return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:  # 2025-13-45: not a date
            continue
    return None


def epoch_date(seconds: float | None) -> datetime | None:
    """Epoch seconds as a UTC date, or None when they cannot be a run's date."""
    if seconds is None or not _PLAUSIBLE_EPOCH_S[0] <= seconds < _PLAUSIBLE_EPOCH_S[1]:
        return None
    return datetime.fromtimestamp(seconds, UTC)


class LogParser(ABC):
    format: ClassVar[LogFormat]
    max_problems_kept: ClassVar[int | None] = MAX_PROBLEMS_KEPT  # None: every problem listed
    reads_bytes: ClassVar[bool] = False  # fed the raw stream (feed_stream), not decoded lines
    # Bytes that only this format writes, each an event of its own (MLPerf's `:::MLLOG`): a file holding a few of
    # them is this format whatever launcher output surrounds them (ingest/detect.py, weigh_head).
    owning_marker: ClassVar[bytes | None] = None
    # A reader of last resort (any console log of `name: value` pairs): a candidate only where no other format
    # claims MIN_EVIDENCE lines of the head or the head as a whole (ingest/detect.py, weigh).
    fallback: ClassVar[bool] = False
    # Where this format's step times come from when its summary's meta does not say (`step_time_source`, keyed as
    # ingest/parsers/_records.STEP_TIME_SOURCES): a format of its own prints its step time per step.
    step_time_source: ClassVar[str] = "logged"
    # Whether feed() reads each carriage-return frame of a line on its own (a long line of frames is then kept).
    splits_frames: ClassVar[bool] = False

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.problems: list[LineProblem] = []
        self.left_out: Counter[str] = Counter()  # problems past MAX_PROBLEMS_KEPT, by kind: said, never silent
        self.skipped_lines = 0
        self.notes: list[str] = []  # said of the whole file by detection (stray lines); the pipeline adds them
        self.started_at: datetime | None = None  # the earliest time the log printed (saw_time)
        # what the log's configuration lines state so far (ingest.config_lines.ConfigLines, fed each chunk before
        # the parser): set by the pipeline; None when the file is read without it
        self.config_lines: Any = None

    def stated(self, field: str) -> str | int | None:
        """The value the log's configuration lines state for `field` so far (see ingest.config_lines), or None."""
        return self.config_lines.value(field) if self.config_lines is not None else None

    def saw_time(self, when: datetime | None) -> None:
        """A time the log printed: the run started no later than it."""
        if when is not None and (self.started_at is None or when < self.started_at):
            self.started_at = when

    def look(self, head: str) -> None:
        """Called once with the file's head (clean text) before any chunk: what a parser reads every chunk by (the
        console reader's frameworks and line prefixes). By default nothing."""

    @property
    def chunk_bytes(self) -> int | None:
        """How many bytes of text a chunk holds for this parser; None: ingest.text.CHUNK_BYTES."""
        return None

    @classmethod
    @abstractmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        """Whether the first bytes of a file (clean text) look like this format (detection's first question)."""

    @classmethod
    def sniff_bytes(cls, head: bytes, file_name: str) -> bool:
        """For a parser that reads bytes: whether the file's first bytes (decompressed) are this format; asked
        before any text detection."""
        return False

    def feed_stream(self, stream: BinaryIO) -> Iterator[pl.DataFrame]:
        """For a parser that reads bytes: the steps of the whole stream, in frames, read once in order."""
        raise NotImplementedError(f"{type(self).__name__} reads lines, not a byte stream")

    @classmethod
    def claims(cls, line: str) -> bool:
        """Whether one line is evidence of this format (detection weighs the head's lines by this); by default the
        line alone would pass sniff()."""
        return cls.sniff(line, "")

    @classmethod
    def claimer(cls) -> Callable[[str], bool]:
        """claims() for the lines of one head: a reader whose claims consult data rows (frameworks, keys) loads
        them here once instead of once a line."""
        return cls.claims

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

    def final_steps(self) -> pl.DataFrame:
        """Steps found only in finish() (a whole-file JSON parser); read by the pipeline after finish()."""
        return empty_steps()

    def without_long_lines(self, lines: Sequence[str], first_lineno: int) -> Sequence[str]:
        """lines, with each one longer than MAX_PARSED_LINE_CHARS made empty and counted as a skipped line; for a
        parser that reads each carriage-return frame on its own (splits_frames), a long line of frames keeps every
        frame within the limit (a terminal capture runs a progress bar's refreshes into one line)."""
        if max(map(len, lines), default=0) <= MAX_PARSED_LINE_CHARS:
            return lines
        kept = list(lines)
        for i, line in enumerate(lines):
            if len(line) > MAX_PARSED_LINE_CHARS and self.splits_frames and "\r" in line:
                frames = line.split("\r")
                kept[i] = "\r".join(f for f in frames if len(f) <= MAX_PARSED_LINE_CHARS)
                if dropped := sum(len(f) > MAX_PARSED_LINE_CHARS for f in frames):
                    self.note_problem(first_lineno + i, f"{dropped:,} carriage-return frames of over "
                                                        f"{MAX_PARSED_LINE_CHARS:,} characters skipped",
                                      kind="line too long")
            elif len(line) > MAX_PARSED_LINE_CHARS:
                kept[i] = ""
                self.problem(first_lineno + i, f"line of {len(line):,} characters (over {MAX_PARSED_LINE_CHARS:,}) "
                                               "skipped", kind="line too long")
        return kept

    def problem(self, line: int | None, reason: str, *, kind: str | None = None) -> None:
        """A skipped line: counted, and listed while fewer than MAX_PROBLEMS_KEPT are (see note_problem)."""
        self.skipped_lines += 1
        self.note_problem(line, reason, kind=kind)

    def note_problem(self, line: int | None, reason: str, *, kind: str | None = None) -> None:
        """A line used only in part (not counted as skipped): listed while fewer than MAX_PROBLEMS_KEPT are, past
        that counted in left_out under `kind` (default: problem_kind(reason)), so the output says what it left out."""
        if self.max_problems_kept is None or len(self.problems) < self.max_problems_kept:
            self.problems.append(LineProblem(self.file_name, line, reason))
        else:
            self.left_out[kind or problem_kind(reason)] += 1


def step_frames(parser: LogParser, stream: BinaryIO, *, chunk_bytes: int | None = None) -> Iterator[pl.DataFrame]:
    """The parser's step frames for a whole (decompressed) stream: fed as bytes or as line chunks, by its kind."""
    if parser.reads_bytes:
        yield from parser.feed_stream(stream)
        return
    for chunk in iter_text_chunks(stream, chunk_bytes=chunk_bytes or parser.chunk_bytes):
        if chunk.first_lineno == 1:
            parser.look(chunk.text[:HEAD_CHARS])
        yield parser.feed_prepared(parser.prepare_chunk(chunk))
