"""Any text: every parser returns step frames or raises ParseError, and refuses a file without steps."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ingest.parsers import (
    claims_csv,
    hf_trainer_state,
    key_value_log,
    metrics_file,
    mlperf,
    optimum_habana,
    torchtitan,
)
from ingest.parsers.base import LogParser
from ingest.parsers.deepspeed import DeepSpeedParser
from ingest.parsers.megatron import MegatronParser
from ingest.parsers.megatron_golden import MegatronGoldenParser
from ingest.parsers.nemo import NemoParser
from perfledger.errors import ParseError
from perfledger.records import STEP_SCHEMA
from tests.ingest.parsers.helpers import megatron_line

LINE_PARSERS: tuple[type[LogParser], ...] = (MegatronParser, DeepSpeedParser, NemoParser, MegatronGoldenParser)


def test_parsers_refuse_a_file_without_steps_with_a_parse_error() -> None:
    for parser_cls in LINE_PARSERS:
        parser = parser_cls("empty.log")
        parser.feed(["hello", "world"], 1)
        with pytest.raises(ParseError):
            parser.finish()


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.text(alphabet=hs.characters(codec="utf-8"), max_size=200), max_size=20),
       hs.sampled_from(LINE_PARSERS))
def test_arbitrary_text_gives_frames_or_parse_error(lines: list[str], parser_cls: type) -> None:
    seeded = lines + [megatron_line(1)[: len(lines) * 7]]
    parser = parser_cls("fuzz.log")
    try:
        frame = parser.feed(seeded, 1)
        assert frame.schema == pl.Schema(STEP_SCHEMA)
        parser.finish()
    except ParseError:
        pass


OTHER_PARSERS: list[type[LogParser]] = [m.PARSER for m in (mlperf, hf_trainer_state, key_value_log, metrics_file,
                                                            optimum_habana, torchtitan, claims_csv)]


FRAGMENTS = hs.sampled_from([
    ":::MLLOG {", '"key": "run_stop"', "step: 3  loss: nan  tps: 1,2", "iter 1: loss 2, time 3ms, mfu -1%",
    "s:1 trl:2", "{'loss': 1}", '{"log_history": [', "metric,value,unit,source_title,model,accelerator\n",
    "\r", "\n", "}", "]", ",", "%", "train_runtime = 1:2", '{"a::b": {"gaudi2": {"train_samples_per_second": 1}}}',
    "1|51|Loss: 1.23:  10%|█ | 51/512 [01:02<05:16,  1.46it/s, lr=2e-5]", "│ loss │ 1.5 │ lr │ 2e-5 │",
    "[batch=3/10]:", "DLLL ", "Train step 2/9 done.",
])


@settings(max_examples=40, deadline=None)
@given(text=hs.lists(hs.one_of(FRAGMENTS, hs.text(max_size=30)), max_size=12).map("".join))
def test_any_text_gives_frames_or_parse_error(text: str) -> None:
    for parser_cls in OTHER_PARSERS:
        parser = parser_cls("fuzz.txt")
        try:
            frame = parser.feed(text.split("\n"), 1)
            assert dict(frame.schema) == STEP_SCHEMA
            parser.finish()
        except ParseError:
            pass
