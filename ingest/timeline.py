"""The span of dates a text log printed: its first and its last, read from the chunks as they go by (the first
chunk's head and the last chunk's tail), so that goodput (perfledger.calc.goodput) can measure the wall clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ingest.parsers.base import date_in_text
from ingest.text import TextChunk

TAIL_CHARS = 64 * 1024  # the end of the last chunk searched for its last printed date


class PrintedSpan:
    """Passes chunks through, keeping the first date of the first chunk and the tail of the last one."""

    def __init__(self, chunks: Iterator[TextChunk]) -> None:
        self._chunks = chunks
        self.first: datetime | None = None
        self._tail = ""

    def __iter__(self) -> Iterator[TextChunk]:
        for chunk in self._chunks:
            if self.first is None:
                self.first = date_in_text(chunk.text[:TAIL_CHARS])
            self._tail = chunk.text[-TAIL_CHARS:]
            yield chunk

    def last(self) -> datetime | None:
        """The last date printed in the tail of the last chunk."""
        for line in reversed(self._tail.splitlines()):
            if (found := date_in_text(line)) is not None:
                return found
        return None

    def as_meta(self) -> dict[str, list[str]]:
        """{"printed_span": [first, last]} (ISO dates) when both are known and in order; else {}."""
        last = self.last()
        if self.first is None or last is None or last < self.first:
            return {}
        return {"printed_span": [self.first.isoformat(), last.isoformat()]}
