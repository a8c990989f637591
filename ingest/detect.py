"""Which parser reads a file: decided by content (the first 64 KiB of clean text), never by file name alone.

Weight of evidence, not first match: the parsers whose sniff() accepts the head are the candidates; each counts the
head's lines it claims (LogParser.claims), and the one with most lines wins, ties going to the order of
ingest.parsers.ORDER (MLPerf before NeMo, DeepSpeed before Megatron: layered formats print both kinds of line).
A candidate whose evidence is the head as a whole (claims no single line: JSON documents, DeepSpeed's pair of
markers) keeps the file when it comes before the most-claimed one, or when that one claims fewer than
MIN_EVIDENCE lines. A line that would have won under first match but was outweighed (one
stray `:::MLLOG` line atop a Megatron log) is a stray line: the parser counts it as skipped and the run says so.

A binary format (TensorBoard events) is asked first, by its bytes (LogParser.sniff_bytes): its head is no text. Then a
format with an event marker of its own (LogParser.owning_marker: MLPerf's `:::MLLOG`) keeps a file whose first MiB
holds at least MIN_EVIDENCE of its events, whatever else is printed around them; a line or two does not.

Some logs open with 64 KiB of shell trace or environment dump before their framework says a word (a bigscience
Megatron job's `module load` trace); `detect_head` looks again at a wider head (1 MiB) when the 64 KiB head
names no format, or names one by fewer than MIN_EVIDENCE lines.
"""

from __future__ import annotations

import gzip
import io
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import polars as pl

from ingest.documents import MAX_DOCUMENT_BYTES, code_view
from ingest.parsers import registry
from ingest.parsers._common import concat_steps
from ingest.parsers.base import LogParser, step_frames
from ingest.text import HEAD_BYTES, clean_text, decode, head_text
from perfledger.errors import UnknownFormat
from perfledger.records import ParseSummary
from perfledger.vocabulary import LogFormat

WIDE_HEAD_BYTES = 1024 * 1024
MIN_EVIDENCE = 3  # a winner with fewer claimed lines in the 64 KiB head is checked against the wide head


@dataclass(frozen=True, slots=True)
class StrayLine:
    """A head line of another format, outweighed by the file's own: skipped by the parser, noted in the run."""

    lineno: int
    format: LogFormat


@dataclass(frozen=True, slots=True)
class Detection:
    parser: type[LogParser]
    evidence: int  # head lines the parser claims (0: its evidence is the head as a whole; a sole candidate's
    # count stops at MIN_EVIDENCE)
    stray: tuple[StrayLine, ...] = ()


def weigh(head: str, *, file_name: str) -> Detection:
    """The parser for a file whose first bytes (as clean text) are `head`, by weight of evidence; UnknownFormat
    if no parser accepts it."""
    candidates = [parser for parser in registry() if parser.sniff(head, file_name)]
    outweighed: list[type[LogParser]] = []  # formats of their own a reader of last resort outweighed
    if any(p.fallback for p in candidates) and not all(p.fallback for p in candidates):
        kept = _without_fallback(candidates, head)
        outweighed = [p for p in candidates if p not in kept]
        candidates = kept
    if not candidates:
        known = ", ".join(fmt.value for fmt in LogFormat)
        raise UnknownFormat(file_name, None, f"not a log format perfledger reads (known: {known})")
    lines = head.split("\n")
    if len(candidates) == 1:  # nothing to weigh: count its evidence only as far as MIN_EVIDENCE
        claims = (i for i, line, claim in _claimed(lines, candidates[0]) if claim)
        return Detection(candidates[0], sum(1 for _ in itertools.islice(claims, MIN_EVIDENCE)),
                         _stray(lines, outweighed, candidates[0]))
    claimed = [[i for i, _, claim in _claimed(lines, parser) if claim] for parser in candidates]
    if not claimed[0]:
        return Detection(candidates[0], 0)
    best = max(range(len(candidates)), key=lambda k: (len(claimed[k]), -k))
    # Whole-head evidence keeps the file when it comes first or when the most claimed is a line or two.
    whole = [k for k in range(len(candidates)) if not claimed[k]]
    if whole and (whole[0] < best or len(claimed[best]) < MIN_EVIDENCE):
        best = whole[0]
    own = set(claimed[best])
    stray = sorted({StrayLine(i + 1, candidates[k].format) for k in range(best) for i in claimed[k] if i not in own},
                   key=lambda s: s.lineno)
    stray = sorted({*stray, *_stray(lines, outweighed, candidates[best])}, key=lambda s: s.lineno)
    return Detection(candidates[best], len(claimed[best]), tuple(stray))


def _stray(lines: list[str], outweighed: list[type[LogParser]], winner: type[LogParser]) -> tuple[StrayLine, ...]:
    """The head lines an outweighed format claimed that the winner does not: a stray `:::MLLOG` line atop a console
    log of records."""
    own = winner.claimer()
    return tuple(StrayLine(i + 1, parser.format) for parser in outweighed for i, _, claim in _claimed(lines, parser)
                 if claim and not own(lines[i]))


def _claimed(lines: list[str], parser: type[LogParser]) -> Iterator[tuple[int, str, bool]]:
    """(index, line, whether `parser` claims it) of each line, lazily, the parser's data rows loaded once."""
    claims = parser.claimer()
    return ((i, line, claims(line)) for i, line in enumerate(lines))


def _without_fallback(candidates: list[type[LogParser]], head: str) -> list[type[LogParser]]:
    """Readers of last resort against formats of their own: the former alone when they read at least MIN_EVIDENCE
    lines of the head as records and no format of its own claims as many (a loose sniff, a JSON document parser
    whose evidence is the head as a whole); else the formats of their own alone."""
    lines = head.split("\n")

    def claimed(parser: type[LogParser]) -> int:
        return sum(1 for _ in itertools.islice((i for i, _, claim in _claimed(lines, parser) if claim), MIN_EVIDENCE))

    own = [p for p in candidates if not p.fallback]
    last = [p for p in candidates if p.fallback]
    if max(map(claimed, last)) >= MIN_EVIDENCE and max(map(claimed, own)) < MIN_EVIDENCE:
        return last
    return own


def detect_format(head: str, *, file_name: str) -> type[LogParser]:
    """The parser class for a file whose first bytes (as clean text) are `head`; UnknownFormat if none."""
    return weigh(head, file_name=file_name).parser


def weigh_head(raw: bytes, *, file_name: str) -> Detection:
    """The parser that reads its bytes, when one claims `raw`; else weigh() on the first 64 KiB of `raw`; on all
    of it (up to 1 MiB) when that names no format, or names one by fewer than MIN_EVIDENCE lines (a stray line at
    the top of a log whose own lines start later)."""
    binary = next((p for p in registry() if p.reads_bytes and p.sniff_bytes(raw, file_name)), None)
    if binary is not None:
        return Detection(binary, 0)
    owner = _owner(raw)
    if owner is not None:
        return owner
    try:
        found = weigh(head_text(raw[:HEAD_BYTES]), file_name=file_name)
    except UnknownFormat:
        if len(raw) <= HEAD_BYTES:
            raise
        return weigh(clean_text(decode(raw[:WIDE_HEAD_BYTES])), file_name=file_name)
    if found.evidence == 0 or found.evidence >= MIN_EVIDENCE or len(raw) <= HEAD_BYTES:
        return found
    wide = weigh(clean_text(decode(raw[:WIDE_HEAD_BYTES])), file_name=file_name)
    return wide if wide.evidence > found.evidence else found


def _owner(raw: bytes) -> Detection | None:
    """The format whose own event marker (LogParser.owning_marker) the first MiB holds at least MIN_EVIDENCE times:
    MLPerf's `:::MLLOG` events are the file's results however many lines of launcher or framework output surround
    them (NeMo progress bars before the first event once outweighed them in the 64 KiB head)."""
    for parser in registry():
        marker = parser.owning_marker
        if marker is not None and (count := raw.count(marker, 0, WIDE_HEAD_BYTES)) >= MIN_EVIDENCE:
            return Detection(parser, count)
    return None


def detect_head(raw: bytes, *, file_name: str) -> type[LogParser]:
    """The parser class for a file whose first bytes are `raw` (see weigh_head)."""
    return weigh_head(raw, file_name=file_name).parser


def detect_stream(stream: BinaryIO, head: bytes, *, file_name: str) -> tuple[BinaryIO, bytes, Detection]:
    """The stream to parse, its head and its detection: the file itself (see weigh_head); or, when no format reads
    the file and it is a document (a README, a docs page) whose code blocks one does read, the view of its code
    blocks (ingest.documents.code_view), line for line. The stream is read to its end for the view (a document is
    small), so that whoever counts or hashes what passes sees the whole file."""
    try:
        return stream, head, weigh_head(head, file_name=file_name)
    except UnknownFormat as refused:
        whole = stream.read(MAX_DOCUMENT_BYTES + 1)
        view = code_view(decode(whole)) if len(whole) <= MAX_DOCUMENT_BYTES else None
        if view is None:
            raise
        raw = view.encode("utf-8")
        try:
            found = weigh_head(raw[:WIDE_HEAD_BYTES], file_name=file_name)
        except UnknownFormat:
            raise refused from None
        return io.BytesIO(raw), raw[:WIDE_HEAD_BYTES], found


def skip_stray_lines(parser: LogParser, found: Detection) -> None:
    """Count the head's stray lines (see StrayLine) that detection `found` as skipped lines of `parser` and add a
    note to its run."""
    stray = found.stray if isinstance(parser, found.parser) else ()
    for line in stray:
        parser.problem(line.lineno, f"a line of the {line.format.value} format in a {parser.format.value} log; "
                                    "skipped")
    if stray:
        formats = ", ".join(sorted({s.format.value for s in stray}))
        lines = ", ".join(str(s.lineno) for s in stray[:5]) + (" ..." if len(stray) > 5 else "")
        parser.notes.append(f"{len(stray)} stray line(s) of another format ({formats}) skipped: line {lines}")


def detect_file(path: Path) -> type[LogParser]:
    with _open(path) as stream:
        return detect_head(stream.read(WIDE_HEAD_BYTES), file_name=path.name)


def parse_file(path: Path) -> tuple[ParseSummary, pl.DataFrame]:
    """Detect, then parse the whole file: (summary, all steps). A convenience for tests and scripts."""
    parser = detect_file(path)(path.name)
    with _open(path) as stream:
        frames = list(step_frames(parser, stream))
    summary = parser.finish()
    return summary, concat_steps([*frames, parser.final_steps()])


def _open(path: Path) -> BinaryIO:
    with path.open("rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else path.open("rb")  # type: ignore[return-value]
