"""Chunks of a stream carry whole lines and the right first line number, however the stream is cut."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ingest import native
from ingest.text import TextChunk, clean_text, iter_text_chunks
from tests.conftest import LOGS

# Escapes whole, cut short, split by a NUL or a newline, and look-alikes: the compiled reader removes what
# clean_text's pattern removes, NULs first.
ESCAPES = [b"\x1b", b"\x1b[", b"\x1b[38;2;180;60;0m", b"\x1b[?25l", b"\x1b[2 q", b"\x1b[3\x001m", b"\x1b(B",
           b"\x1b)0", b"\x1b(", b"\x1b(\x00B", b"\x1b[31\nm", b"\x1b[1;", b"[31m", b"\x1b\x1b[0m", b";", b"m", b"("]
PIECES = [b"a", b"\n", b"\r\n", b"\r", b"\x00", b"\x1b[31m", b"\xff", "é✓".encode(), b"iteration 5/ 9 |", b""]


@settings(deadline=None)
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


needs_clean_ascii = pytest.mark.skipif(native.clean_ascii() is None,
                                       reason=f"no compiled helper here: {native.why_not('clean_ascii')}")


@needs_clean_ascii
@settings(deadline=None)
@given(hs.lists(hs.sampled_from([*PIECES, *ESCAPES, b"x" * 7, b"\n" * 9, b"\x7f", b"\x80", b"\x1a", b"\x1c",
                                  b"\x01"]), max_size=40))
def test_a_plain_ascii_block_is_read_as_decoding_and_cleaning_would(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    read = native.clean_ascii().text(memoryview(raw))  # type: ignore[union-attr]
    expected = clean_text(raw.decode("utf-8", errors="replace"))
    if read is None:
        assert not raw.isascii()
        return
    text, n_lines = read
    assert text == expected and text.isascii()
    assert n_lines == TextChunk(1, text).n_lines


def test_chunks_are_the_same_without_the_compiled_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b"".join(PIECES * 3) + b"plain\nascii\n" * 50
    with_helper = list(iter_text_chunks(io.BytesIO(raw), chunk_bytes=64))
    monkeypatch.setenv("PERFLEDGER_NATIVE", "0")
    native._module.cache_clear()
    try:
        assert list(iter_text_chunks(io.BytesIO(raw), chunk_bytes=64)) == with_helper
    finally:
        native._module.cache_clear()


@needs_clean_ascii
@pytest.mark.parametrize("raw", [b"\n" * 10_007, b"a\n" * 5_003 + b"tail", b"\n" * 2_040 + b"x\n" * 9])
def test_long_runs_of_newlines_are_all_counted(raw: bytes) -> None:
    assert native.clean_ascii().text(raw) == (raw.decode(), TextChunk(1, raw.decode()).n_lines)  # type: ignore[union-attr]


@needs_clean_ascii
@pytest.mark.parametrize("name", ["qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log",
                                  "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log",
                                  "msft_megatron_ds_gpt3_125m_random_ltd_baseline_8gpu_ansi.log"])
def test_a_coloured_log_is_cleaned_by_the_compiled_reader_as_by_clean_text(name: str) -> None:
    raw = (LOGS / name).read_bytes()
    assert b"\x1b[" in raw and raw.isascii()
    text, n_lines = native.clean_ascii().text(raw)  # type: ignore[union-attr]
    assert text == clean_text(raw.decode()) and n_lines == TextChunk(1, text).n_lines
