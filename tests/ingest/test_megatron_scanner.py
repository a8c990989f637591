"""The compiled scanner (ingest/native/labeled_scan.c) reads a Megatron chunk into the same segments as Polars.

megatron._segments (Polars, by position where sure, by regex elsewhere) is the definition; the scanner only
answers where it is sure to agree and leaves the rest to the regexes, so on any text the two paths give equal
segments, or the scanner declines the chunk (returns None) and Polars reads it.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs
from polars.testing import assert_series_equal

from ingest import native
from ingest.parsers.megatron import fields as mfields
from ingest.parsers.megatron import parser as mparser
from ingest.parsers.megatron import scan as mscan
from ingest.text import MAX_LINE_BYTES, TextChunk, clean_text
from tests.conftest import LOGS
from tests.ingest.test_megatron_by_position import TRICKY

needs_scanner = pytest.mark.skipif(native.labeled_scan() is None,
                                   reason=f"no compiled scanner here: {native.why_not()}")

ASCII_FIXTURES = ["cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out", "bigscience_meg_gpt2_perf_n16_v100.out",
                  "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log",
                  "megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt"]
LAUNCH = "using world size: 8, data-parallel size: 8, tensor-model-parallel size: 1"
CONFIG = ["  num_layers ...................................... 24", "  seq_length ...................................... 2048",
          "  global_batch_size ............................... 256"]
ASCII_TRICKY = [line for line in TRICKY if line.isascii()]


def fixture_text(name: str) -> str:
    return clean_text((LOGS / name).read_text(encoding="utf-8", errors="replace"))


def polars_segments(text: str, first_lineno: int) -> list[mscan._Segment]:
    lines = TextChunk(first_lineno, text).lines()
    return mscan._segments(pl.Series("line", lines, dtype=pl.String), first_lineno, all(map(str.isascii, lines)))


def assert_same_segments(ours: list[mscan._Segment], oracle: list[mscan._Segment]) -> None:
    assert len(ours) == len(oracle)
    for a, b in zip(ours, oracle, strict=True):
        assert (a.starts_launch, a.config_lines) == (b.starts_launch, b.config_lines)
        assert (a.steps is None) == (b.steps is None)
        if a.steps is None or b.steps is None:
            continue
        assert_series_equal(a.steps.step, b.steps.step, check_names=False)
        assert_series_equal(a.steps.lineno, b.steps.lineno, check_names=False)
        assert list(a.steps.cols) == list(b.steps.cols)
        for name, column in b.steps.cols.items():
            assert_series_equal(a.steps.cols[name], column, check_names=False)


def assert_scans_as_polars(text: str, first_lineno: int = 1) -> bool:
    """Equal segments where the scanner reads the text; whether it did."""
    scanned = mscan._scanned_segments(text, first_lineno)
    if scanned is not None:
        assert_same_segments(scanned, polars_segments(text, first_lineno))
    return scanned is not None


@needs_scanner
def test_every_ascii_megatron_fixture_scans_as_polars_reads_it() -> None:
    for name in ASCII_FIXTURES:
        assert assert_scans_as_polars(fixture_text(name), first_lineno=41), name


@needs_scanner
def test_every_log_fixture_scans_as_polars_reads_it_or_is_declined() -> None:
    names = [path.name for path in LOGS.iterdir() if not path.name.endswith((".json", ".md", ".gz"))]
    assert sum(assert_scans_as_polars(fixture_text(name)) for name in names) >= len(names) // 2


@needs_scanner
def test_tricky_lines_scan_as_polars_reads_them() -> None:
    assert assert_scans_as_polars("\n".join(ASCII_TRICKY) + "\n")
    for line in ASCII_TRICKY:
        assert assert_scans_as_polars(line)


# Pieces of an iteration line: every label and other spelling, and values the regexes read or refuse.
LABELS = [field.label for field in mfields._LABELED.values()] + list(mfields._SPELLINGS)
VALUES = ["0", "1", "007", "12", "1.5", ".5", "5.", "1e3", "1E-05", "1.2E+01", "2.5e", "+7", "-3", "nan", "inf",
          "x", "", "1" * 25, "9007199254740993", "9007199254740992", "1e22", "1e23", "0.0000000000000000000001",
          "123456789012345678901", "1.0/2.0", "3/", "12 / 500", "12/500", "4 /x", "1,5", "0 0"]
SEPARATORS = [" | ", "|", " ", "\t", "  ", " |", "| "]
piece = hs.one_of(hs.sampled_from(LABELS), hs.sampled_from(VALUES), hs.sampled_from(SEPARATORS))
field = hs.tuples(hs.sampled_from(LABELS), hs.sampled_from(["", " ", "\t", "   "]), hs.sampled_from(VALUES),
                  hs.sampled_from(["", "/ 500", "/2.0", " / 12", "/"]), hs.sampled_from(SEPARATORS)).map("".join)
made_up_line = hs.lists(hs.one_of(field, field, piece), max_size=12).map("".join)


@needs_scanner
@settings(deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from(["", " iteration 7/ 500 |", " iteration\t12 / 9 |", " iteration 3/ 5 | "]),
                          made_up_line), min_size=1, max_size=6))
@example([(" iteration 3/ 5 |", " number of skipped iterations: 0 | number of skipped iterations: 4 |")])
@example([(" iteration 3/ 5 |", " lm loss: 1.5 | lm-loss: 2.5 |"), (" iteration 4/ 5 |", " lm loss: 1.5 |")])
@example([("", "iteration12/ 500 | elapsed time per iteration (ms): 5.0 |")])  # no space after the label
@example([(" iteration 3/ 5 |", " elapsed time per iteration (ms): 0.0000000000000000000001 |")])
@example([("", "saving checkpoint at iteration     150 to /ckpt"), ("", "before iteration 3) | iteration 4 / 5 |")])
@example([("", "iteration 3 /5 x | iteration\t4/ 5|"), ("", "iteration 3/ 5"), ("", "iteration  / 5 |")])
@example([(" iteration 7/ 500 |", "number of skipped iterations:"),  # a count stated in a line without a step
          ("", "elapsed time per iteration (ms):number of skipped iterations:1 | ")])
def test_made_up_iteration_lines_scan_as_polars_reads_them(lines: list[tuple[str, str]]) -> None:
    assert_scans_as_polars("\n".join(step + rest for step, rest in lines))


@needs_scanner
@settings(max_examples=60, deadline=None)
@given(hs.sampled_from(ASCII_FIXTURES), hs.lists(hs.sampled_from(ASCII_TRICKY + [LAUNCH, "", *CONFIG]), max_size=10),
       hs.integers(0, 400), hs.integers(1, 400), hs.sampled_from(["\n", "\r\n"]), hs.booleans())
def test_any_mix_of_launches_config_and_steps_scans_as_polars(fixture: str, extra: list[str], at: int, size: int,
                                                              newline: str, ends_with_newline: bool) -> None:
    lines = fixture_text(fixture).split("\n")[:size]
    lines[at:at] = extra
    text = newline.join(lines) + (newline if ends_with_newline else "")
    assert assert_scans_as_polars(text, first_lineno=1000)


@needs_scanner
def test_the_scanner_declines_what_only_polars_reads() -> None:
    ok = " iteration 1/ 5 | lm loss: 2.5 |\n"
    assert mscan._scanned_segments(ok, 1) is not None
    assert mscan._scanned_segments(ok + " iteration 2/ 5 | lm loss: 2.5 | ✓\n", 1) is None  # not ASCII
    assert mscan._scanned_segments(ok + " iteration 2/ 5 | TFLOPs: 120.5 |\n", 1) is None  # a field only a regex reads
    assert mscan._scanned_segments(ok + "x" * (MAX_LINE_BYTES + 1) + "\n", 1) is None  # a line TextChunk would cut
    assert mscan._scanned_segments("", 1) == []


def test_without_the_scanner_a_log_parses_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    text = fixture_text(ASCII_FIXTURES[0])
    with_scanner = mparser.MegatronParser("x").prepare_chunk(TextChunk(1, text))
    monkeypatch.setenv("PERFLEDGER_NATIVE", "0")
    native._module.cache_clear()
    try:
        assert native.labeled_scan() is None
        assert native.why_not() == "PERFLEDGER_NATIVE=0"
        assert_same_segments(mparser.MegatronParser("x").prepare_chunk(TextChunk(1, text)), with_scanner)
    finally:
        native._module.cache_clear()


def test_without_the_scanner_megatron_logs_are_read_in_smaller_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure-Polars path holds each chunk's lines as strings: 10 MB chunks put the 1 GB log over 300 MB."""
    monkeypatch.setenv("PERFLEDGER_NATIVE", "0")
    native._module.cache_clear()
    try:
        assert mparser.MegatronParser("x").chunk_bytes == mparser.MegatronParser.CHUNK_BYTES_POLARS < (
            mparser.MegatronParser.CHUNK_BYTES_SCANNED)
    finally:
        native._module.cache_clear()


@needs_scanner
def test_with_the_scanner_megatron_logs_are_read_in_larger_chunks() -> None:
    assert mparser.MegatronParser("x").chunk_bytes == mparser.MegatronParser.CHUNK_BYTES_SCANNED


def test_a_scanner_that_cannot_be_built_says_why_and_is_not_used(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: object) -> None:
    monkeypatch.setenv("PERFLEDGER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")
    native._module.cache_clear()
    try:
        assert native.labeled_scan() is None
        assert "could not build or load labeled_scan.c" in (native.why_not() or "")
        assert mscan._scanned_segments(" iteration 1/ 5 | lm loss: 2.5 |\n", 1) is None
    finally:
        native._module.cache_clear()


def test_the_scan_spec_names_every_labeled_field_once() -> None:
    fields, bail, launch, iteration = mfields._SCAN_SPEC
    assert [f[0].decode() for f in fields] == [mfields._LABELED[name].label for name in mfields._SCANNED]
    assert sorted(mfields._SCANNED) == sorted(mfields._LABELED)
    assert {b.decode() for b in bail} == {mfields._ANCHORS[name] for name in mfields._FIELDS if name not in mfields._LABELED}
    assert launch == tuple(s.encode() for s in mfields._LAUNCH_LITERALS) and iteration == mfields._ITERATION.encode()
