"""No parser takes super-linear time on a line: each format's real fixture, then one hostile line of 10K, 60K
(just under base.MAX_PARSED_LINE_CHARS) and 1M characters."""

from __future__ import annotations

import pytest

from ingest.parsers import registry
from ingest.parsers.base import MAX_PARSED_LINE_CHARS
from perfledger.vocabulary import LogFormat
from tests.ingest.parsers.long_lines import fixture_by_format, hostile_lines, parser_for, primed, seconds_to_feed

# Named from the registry, not found by detecting every fixture (4 s of every worker's collection); a line format
# without a fixture fails below.
FORMATS = sorted(p.format.value for p in registry() if not p.reads_bytes and p.format is not LogFormat.MICROBENCH)


def test_every_line_format_has_a_fixture_to_lengthen() -> None:
    assert sorted(fixture_by_format()) == FORMATS


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_long_line_takes_time_linear_in_its_length(fmt: str) -> None:
    path = fixture_by_format()[fmt]
    parser, lineno = primed(parser_for(fmt), path)
    small, large = hostile_lines(path, 10_000, prefixes=8), hostile_lines(path, 60_000, prefixes=8)
    worst = max(zip(small, large, strict=True), key=lambda pair: seconds_to_feed(parser, lineno, pair[1]))
    t_small = min(seconds_to_feed(parser, lineno, worst[0]) for _ in range(3))
    t_large = min(seconds_to_feed(parser, lineno, worst[1]) for _ in range(3))
    assert t_large < 0.5, f"{fmt}: a 60K-character line took {t_large:.2f} s: {worst[1][:80]!r}"
    assert t_large < 6 * 4 * t_small + 0.05, f"{fmt}: 10K {t_small:.4f} s, 60K {t_large:.4f} s: not linear"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_1_mib_line_is_done_well_under_two_seconds(fmt: str) -> None:
    path = fixture_by_format()[fmt]
    parser, lineno = primed(parser_for(fmt), path)
    for line in hostile_lines(path, 1 << 20, prefixes=2):
        assert seconds_to_feed(parser, lineno, line) < 1.0, f"{fmt}: {line[:80]!r}"


def test_a_line_over_the_limit_is_skipped_and_counted() -> None:
    path = fixture_by_format()["nemo"]
    parser, lineno = primed(parser_for("nemo"), path)
    before = parser.skipped_lines
    parser.feed(["DLL 2024-01-01 00:00:00.0 - INFO " + "a " * MAX_PARSED_LINE_CHARS], lineno)
    assert parser.skipped_lines == before + 1
    assert "characters" in parser.problems[-1].reason


def test_the_nemo_dll_pair_pattern_is_linear_on_a_line_of_keys_without_values() -> None:
    """Regression: `([A-Za-z_][\\w/ ]*?) : ` re-read the rest of the line from every start (32 s at 40K)."""
    import time

    from ingest.parsers.nemo import _DLL_PAIR
    start = time.process_time()  # CPU time: a loaded machine does not make it slower
    _DLL_PAIR.findall("a " * 30_000)
    assert time.process_time() - start < 0.5


def test_the_hf_progress_bar_pattern_is_linear_on_a_run_of_digits() -> None:
    """Regression: `(\\d+)/(\\d+) \\[` started a scan of the run at each digit (14.6 s at 40K)."""
    import time

    from ingest.parsers._console import _BAR
    start = time.process_time()
    _BAR.findall("1" * 60_000 + "/1")
    assert time.process_time() - start < 0.5
