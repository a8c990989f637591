"""The MLLOG bulk readers (the compiled scanner, msgspec) give what json.loads gives, line for line, on events
written to trip them."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from ingest import native
from ingest.parsers._mllog import scanned_chunk
from ingest.parsers.base import LogParser
from ingest.parsers.mlperf import PARSER
from ingest.text import TextChunk
from perfledger.errors import ParseError
from perfledger.records import ParseSummary
from tests.ingest.parsers.helpers import LOGS

needs_scanner = pytest.mark.skipif(native.mllog_scan() is None, reason="no C compiler: the scanner is not built")


class ByMsgspec(PARSER):
    scanned = False


class ByJsonLoads(PARSER):
    bulk = False


def parse_chunk(parser_cls: type[LogParser], text: str) -> tuple[ParseSummary, pl.DataFrame]:
    """The text as one chunk, the way the pipeline hands it over (prepare_chunk, then feed_prepared)."""
    parser = parser_cls("input.txt")
    frame = parser.feed_prepared(parser.prepare_chunk(TextChunk(1, text)))
    return parser.finish(), frame


def outcome(parser_cls: type[LogParser], text: str) -> tuple[ParseSummary, pl.DataFrame] | str:
    try:
        return parse_chunk(parser_cls, text)
    except ParseError as exc:  # a file with no step is refused, the same way by every path
        return str(exc)


_FINITE = hs.one_of(hs.floats(allow_nan=False, allow_infinity=False), hs.integers(-(2**70), 2**70),
                    hs.sampled_from([0, 1, 64, 1e308, 1e-320, 9007199254740993]))
_NUMBERS = hs.one_of(_FINITE, _FINITE, _FINITE, hs.floats())  # now and then NaN or infinite
_ODD = hs.one_of(hs.none(), hs.booleans(), hs.text(max_size=4), hs.lists(hs.integers(), max_size=2),
                 hs.dictionaries(hs.sampled_from(["a", "step"]), hs.integers(), max_size=2))
_VALUE = hs.one_of(_NUMBERS, _NUMBERS, _ODD)
_TRACKED = hs.dictionaries(hs.sampled_from(["train_step_time", "reduced_train_loss", "throughput",
                                            "max_memory_usage", "other"]), _VALUE, max_size=4)
_META = hs.dictionaries(hs.sampled_from(["step", "samples_count", "lr", "file", "epoch_num"]), _VALUE, max_size=4)


@hs.composite
def _event_line(draw: hs.DrawFn) -> str:
    key = draw(hs.sampled_from(["tracked_stats", "train_loss", "global_batch_size", "run_start"]))
    value: Any = draw(hs.one_of(_TRACKED, _VALUE))
    event = {"namespace": "", "time_ms": draw(_NUMBERS), "event_type": "POINT_IN_TIME", "key": key, "value": value}
    if draw(hs.booleans()):
        event["metadata"] = draw(hs.one_of(_META, _ODD))
    text = json.dumps(event)
    edit = draw(hs.sampled_from(["", "", "", "", "cut", "repeat", "escape", "space", "tail"]))
    if edit == "cut":
        text = text[: draw(hs.integers(0, len(text)))]
    elif edit == "repeat":  # a key given twice: json.loads keeps the last
        text = text[:-1] + ', "key": "tracked_stats", "value": {"train_step_time": 3.5}}'
    elif edit == "escape":
        text = text.replace('"key"', '"\\u006bey"')
    elif edit == "space":
        text = f"  {text}\t"
    elif edit == "tail":
        text += " x"
    return f"{draw(hs.sampled_from(['', ' 0: ', 'rank1: ']))}:::MLLOG {text}"


@settings(deadline=None)
@given(hs.lists(_event_line(), min_size=1, max_size=12))
@example([':::MLLOG {"key": "tracked_stats", "value": {"train_step_time": NaN}, "metadata": {"step": 1}}'])
@example([':::MLLOG {"key": "train_loss", "value": true, "metadata": {"step": 1e400}}'])
@example([':::MLLOG {"key": "tracked_stats", "value": {"train_step_time": 1}, "metadata": {"file": '
          + "[" * 5_000 + "]" * 5_000 + "}}"])
def test_any_event_lines_read_in_bulk_give_what_json_loads_gives(lines: list[str]) -> None:
    text = "\n".join([':::MLLOG {"key": "global_batch_size", "value": 8}', *lines])
    by_json = outcome(ByJsonLoads, text)
    for reader in (PARSER, ByMsgspec):
        read = outcome(reader, text)
        if isinstance(by_json, str) or isinstance(read, str):
            assert read == by_json
        else:
            assert read[1].equals(by_json[1])
            assert read[0] == by_json[0]


@pytest.mark.parametrize("name", ["cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt",
                                  "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt",
                                  "amd_mi355x_llama31_8b_v5.1_result_0.txt"])
def test_real_result_files_read_in_bulk_give_what_json_loads_gives(name: str) -> None:
    text = (LOGS / name).read_text(encoding="utf-8")
    summary, steps = parse_chunk(ByJsonLoads, text)
    for reader in (PARSER, ByMsgspec):
        read_summary, read = parse_chunk(reader, text)
        assert steps.height > 0 and read.equals(steps)
        assert read_summary == summary


@needs_scanner
def test_the_scanner_takes_plain_step_events_and_hands_back_the_rest() -> None:
    step = ':::MLLOG {"key": "tracked_stats", "value": {"train_step_time": 0.5}, "metadata": {"step": 64}}'
    text = f'{step}\n:::MLLOG {{"key": "run_start", "value": null}}\nnoise\nseq_len: 8192\n{step}'
    found = scanned_chunk(text, 1, ["seq_len:"])
    assert found is not None
    assert found.events.select("i", "st", "step_raw").rows() == [(0, 0.5, 64.0), (4, 0.5, 64.0)]
    assert [i for i, _ in found.other] == [1, 3]


@needs_scanner
@pytest.mark.parametrize("text", ["caf\u00e9 :::MLLOG {}", ":::MLLOG {}\r\n", "x" * 70_000])
def test_the_scanner_declines_a_chunk_python_must_read(text: str) -> None:
    assert scanned_chunk(text, 1, []) is None
