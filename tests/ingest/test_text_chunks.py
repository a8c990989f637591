"""Chunks of a stream carry whole lines and the right first line number, however the stream is cut."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as hs

from ingest.text import clean_text, iter_text_chunks

PIECES = [b"a", b"\n", b"\r\n", b"\r", b"\x00", b"\x1b[31m", b"\xff", "é✓".encode(), b"iteration 5/ 9 |", b""]


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.sampled_from(PIECES), max_size=60), hs.integers(1, 40))
def test_chunks_hold_every_line_once_with_its_line_number(pieces: list[bytes], chunk_bytes: int) -> None:
    raw = b"".join(pieces)
    chunks = list(iter_text_chunks(io.BytesIO(raw), chunk_bytes=chunk_bytes))
    lineno = 1
    lines: list[str] = []
    for chunk in chunks:
        assert chunk.first_lineno == lineno
        assert chunk.n_lines == len(chunk.lines())
        lineno += chunk.n_lines
        lines += chunk.lines()
    whole = clean_text(raw.decode("utf-8", errors="replace")).split("\n")
    if whole[-1] == "":
        whole.pop()
    assert lines == [line.removesuffix("\r") for line in whole]
