"""The MLLOG bulk reader (msgspec) gives what json.loads gives, line for line, on events written to trip it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as hs

from ingest.parsers.mlperf import PARSER
from perfledger.errors import ParseError
from tests.ingest.parsers.helpers import parse_text


class ByJsonLoads(PARSER):
    bulk = False


_NUMBERS = hs.one_of(hs.floats(allow_nan=True, allow_infinity=True), hs.integers(-(2**70), 2**70),
                     hs.sampled_from([0, 1, 64, 1e308, 1e-320, 9007199254740993]))
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
    edit = draw(hs.sampled_from(["", "cut", "repeat", "escape", "space", "tail"]))
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


@settings(max_examples=300, deadline=None)
@given(hs.lists(_event_line(), min_size=1, max_size=12))
@example([':::MLLOG {"key": "tracked_stats", "value": {"train_step_time": NaN}, "metadata": {"step": 1}}'])
@example([':::MLLOG {"key": "train_loss", "value": true, "metadata": {"step": 1e400}}'])
@example([':::MLLOG {"key": "tracked_stats", "value": {"train_step_time": 1}, "metadata": {"file": '
          + "[" * 5_000 + "]" * 5_000 + "}}"])
def test_any_event_lines_read_in_bulk_give_what_json_loads_gives(lines: list[str]) -> None:
    text = "\n".join([':::MLLOG {"key": "global_batch_size", "value": 8}', *lines])
    try:
        bulk_summary, bulk = parse_text(PARSER, text)
    except ParseError as exc:  # a file with no step is refused the same way by both
        with_json = None
        try:
            parse_text(ByJsonLoads, text)
        except ParseError as same:
            with_json = same
        assert type(with_json) is type(exc) and str(with_json) == str(exc)
        return
    json_summary, by_json = parse_text(ByJsonLoads, text)
    assert bulk.equals(by_json)
    assert bulk_summary == json_summary
