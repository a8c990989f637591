"""The compiled torchtitan scanner gives what the Polars reading gives, line for line, on lines written to trip it."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from ingest import native
from ingest.parsers.base import LogParser
from ingest.parsers.torchtitan import PARSER
from ingest.text import TextChunk, clean_text
from perfledger.errors import ParseError
from perfledger.records import ParseSummary
from tests.ingest.parsers.helpers import LOGS

needs_scanner = pytest.mark.skipif(native.titan_scan() is None, reason="no C compiler: the scanner is not built")
FIXTURES = sorted(path.name for path in LOGS.glob("*.log") if b"[titan]" in path.read_bytes()[:65536])


class ByPolars(PARSER):
    scanned = False


def outcome(parser_cls: type[LogParser], text: str) -> tuple[ParseSummary, pl.DataFrame] | str:
    """The text as one chunk, the way the pipeline hands it over; a refusal as its sentence."""
    parser = parser_cls("input.txt")
    try:
        frame = parser.feed_prepared(parser.prepare_chunk(TextChunk(1, text)))
        return parser.finish(), frame
    except ParseError as exc:
        return str(exc)


CONFIG_LINES = ["[titan] Building llama3 8B with", "[titan] parallelism: dp_shard=8 tp=1",
                "[titan] local batch size 2, global batch size 16, gradient accumulation steps 1, sequence length 8192",
                "[titan] Training starts at step 10"]
_NUMBER = hs.one_of(hs.floats(allow_nan=False, allow_infinity=False).map(repr), hs.integers(0, 10**25).map(str),
                    hs.integers(0, 10**9).map(lambda n: f"{n:,}"),
                    hs.sampled_from(["nan", "inf", "-inf", ".5", "5.", "1e5", "1E-3", "-.5", "1,", ",5", "1,,2", "-",
                                     "1e", "0x10", "1" * 45, "2.5e400"]))
_FIELD = hs.sampled_from(["loss: {}", "grad_norm: {}", "memory: {}GiB(88.1%)", "memory: {} GiB", "memory: {}MiB",
                          "tps: {}", "tflops: {}", "mfu: {}%", "mfu: {}", "lr: {}", "time: {}s", "step_time: {} s",
                          "time: {}sec", "global_avg_loss: {}", "lossy: {}", "loss:{}", "loss: {} loss: 2"])
_PREFIX = hs.sampled_from(["", "[rank0]:[titan] 2026-04-28 12:10:14,527 - root - INFO - ", "global_", "x", "5",
                           "validation ", "validate step: 3 ", "train_step: 9 "])


@hs.composite
def _line(draw: hs.DrawFn) -> str:
    kind = draw(hs.sampled_from(["step", "step", "step", "config", "noise"]))
    if kind == "config":
        return draw(hs.sampled_from(CONFIG_LINES))
    if kind == "noise":
        return draw(hs.text(alphabet="steplosa: 0123456789,.%", max_size=30))
    fields = draw(hs.lists(_FIELD, max_size=8))
    body = "  ".join(f.format(draw(_NUMBER)) for f in fields)
    step = draw(hs.one_of(hs.integers(0, 10**20).map(str), hs.sampled_from(["", "x", "12a", "007"])))
    gap = draw(hs.sampled_from([" ", "  ", "\t", ""]))
    return f"{draw(_PREFIX)}step: {step}{gap}{body}{draw(hs.sampled_from(['', ' ', '  |']))}"


@needs_scanner
@settings(deadline=None)
@given(hs.lists(_line(), min_size=1, max_size=10))
@example(["step: 5  loss: 1,234.5  memory: 1e5GiB(3%)  mfu: 12.5%  time: 1.5s"])
@example(["step: 5  loss: 1,2,  tps: 1,"])
@example(["step: 5  memory: 5.GiB(1%)  mfu: 5.%  time: 1,s"])
def test_any_lines_scanned_give_what_polars_gives(lines: list[str]) -> None:
    text = "\n".join(["[titan] torchtitan version: 0.1", *lines])
    assert _same_frames(text)


def _same_frames(text: str) -> bool:
    scanned, by_polars = outcome(PARSER, text), outcome(ByPolars, text)
    if isinstance(scanned, str) or isinstance(by_polars, str):
        return scanned == by_polars
    return scanned[0] == by_polars[0] and scanned[1].equals(by_polars[1])


@needs_scanner
@pytest.mark.parametrize("name", FIXTURES)
def test_real_logs_scanned_give_what_polars_gives(name: str) -> None:
    text = clean_text((LOGS / name).read_text(encoding="utf-8", errors="replace"))
    assert _same_frames(text)


@needs_scanner
def test_the_scanner_takes_plain_step_lines_and_hands_back_the_rest() -> None:
    scanner = native.titan_scan()
    assert scanner is not None
    text = "\n".join(["[titan] step: 1  loss: 2.5  tps: 3,214  memory: 27.87GiB(88.88%)  mfu: 6.39%", CONFIG_LINES[1],
                      "noise", "validate step: 3  loss: 1.0", "[titan] step: 2  loss: nan"])
    at, steps, values, (asked_at, asked) = scanner.scan(text, ("parallelism:",), 65536)
    assert list(memoryview(at).cast("q")) == [0] and list(memoryview(steps).cast("q")) == [1]
    assert [memoryview(values[k]).cast("d")[0] for k in (0, 3)] == [2.5, 3214.0]  # loss, tps
    assert list(memoryview(asked_at).cast("q")) == [1, 3, 4] and asked[0] == CONFIG_LINES[1]
