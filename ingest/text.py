"""Bytes -> clean text lines, in chunks, in bounded memory.

What real logs throw at us and what happens here: non-UTF-8 bytes become U+FFFD (never an exception);
ANSI colour codes and NUL characters are removed; a CRLF ending loses its CR; carriage-return progress frames
inside one line are kept (parsers that read tqdm bars split on "\r" themselves); a line longer than
MAX_LINE_BYTES is cut there, so one newline-free gigabyte cannot take the memory with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ingest import native

CHUNK_BYTES = 8 * 1024 * 1024  # a parser may ask for other sizes (LogParser.chunk_bytes)
MAX_LINE_BYTES = 1024 * 1024
HEAD_BYTES = 64 * 1024

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]")


def clean_text(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor moves) and NUL characters from text.

    NULs are what a node that crashed mid-write leaves at the end of its log; PostgreSQL refuses them in text,
    so a log stored on DuckDB would be refused on the team server.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    return _ANSI.sub("", text) if "\x1b" in text else text


def decode(raw: bytes | memoryview) -> str:
    return str(raw, "utf-8", errors="replace")


def head_text(raw: bytes) -> str:
    """The first bytes of a file as clean text, for format detection."""
    return clean_text(decode(raw[:HEAD_BYTES]))


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Whole lines of a file, decoded and cleaned: line `first_lineno` starts `text`.

    A parser reads lines(); text tells it more at no cost (whether the chunk is ASCII: text.isascii()).
    """

    first_lineno: int
    text: str
    n_lines: int = -1  # -1: counted from text on construction

    def __post_init__(self) -> None:
        if self.n_lines < 0:
            counted = self.text.count("\n") + (0 if self.text.endswith("\n") else 1) if self.text else 0
            object.__setattr__(self, "n_lines", counted)

    def lines(self) -> list[str]:
        lines = self.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if "\r" in self.text:
            lines = [line.removesuffix("\r") for line in lines]
        if len(self.text) > MAX_LINE_BYTES and max(map(len, lines), default=0) > MAX_LINE_BYTES:
            lines = [line[:MAX_LINE_BYTES] for line in lines]
        return lines


def iter_text_chunks(stream: BinaryIO, *, chunk_bytes: int | None = None) -> Iterator[TextChunk]:
    """Consecutive chunks of whole lines of the stream (about CHUNK_BYTES each), each decoded and cleaned."""
    lineno = 1
    fast = native.clean_ascii()
    for block in _line_blocks(stream, chunk_bytes or CHUNK_BYTES):
        plain = fast.text(block) if fast is not None else None
        out = [TextChunk(lineno, *plain) if plain is not None else TextChunk(lineno, clean_text(decode(block)))]
        del block
        lineno += out[0].n_lines
        yield out.pop()  # the text lives as long as the parser needs it, not until the next read


def iter_line_chunks(stream: BinaryIO, *, chunk_bytes: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number of the first line, clean lines) for consecutive chunks of the stream."""
    for chunk in iter_text_chunks(stream, chunk_bytes=chunk_bytes):
        yield chunk.first_lineno, chunk.lines()


def _line_blocks(stream: BinaryIO, chunk_bytes: int) -> Iterator[memoryview]:
    """Blocks of about chunk_bytes that end at a newline (or a cut past MAX_LINE_BYTES, or the end of the file).

    Every block is a view into one buffer, read into in place: the next block overwrites it, so a caller uses
    each before asking for the next. Fresh bytes per read (the read, then carry + read) were two page-faulted
    copies of the file: 0.5 s of system time per GB.
    """
    buffer = bytearray(chunk_bytes + MAX_LINE_BYTES)
    view = memoryview(buffer)
    held = 0  # the carry: a line's start whose end was not read yet, moved to the front of the buffer
    while n := _read_into(stream, view[held : min(held + chunk_bytes, len(buffer))]):
        end = held + n
        cut = buffer.rfind(b"\n", held, end)  # the carry holds no newline
        if cut < 0:
            if end <= MAX_LINE_BYTES:
                held = end
                continue
            cut = end - 1  # a newline-free run past the limit: emit it as one cut line
        yield view[: cut + 1]
        held = end - cut - 1  # under what was just read, or nothing after a cut: a read always has room
        buffer[:held] = buffer[cut + 1 : end]
    if held:
        yield view[:held]


def _read_into(stream: BinaryIO, target: memoryview) -> int:
    """Fill target from stream as far as it goes (a decompressing stream returns less than asked); 0 at the end."""
    filled = 0
    while filled < len(target) and (n := stream.readinto(target[filled:])):  # type: ignore[attr-defined]
        filled += n
    return filled
