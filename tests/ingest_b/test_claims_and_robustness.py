"""Claims CSV rows become results or line problems; no parser raises anything but ParseError on any text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ingest.parsers import (
    claims_csv,
    hf_results_json,
    hf_trainer_log,
    hf_trainer_state,
    llmc,
    mlperf,
    nanogpt,
    optimum_habana,
    torchtitan,
)
from perfledger.errors import ParseError
from perfledger.records import STEP_SCHEMA

from .helpers import parse_text

HEADER = "metric,value,unit,source_title,model,accelerator"


def test_claims_csv_bad_metric_on_line_3_is_reported_on_line_3() -> None:
    text = "\n".join([HEADER, "mfu,45,%,Blog,Llama 2 7B,H100", "speed,9,x,Blog,Llama 2 7B,H100"])
    summary, _ = parse_text(claims_csv.PARSER, text, "claims.csv")
    assert [(p.line, "unknown metric" in p.reason) for p in summary.problems] == [(3, True)]
    assert summary.results[0].value == pytest.approx(0.45)  # % -> fraction


def test_claims_csv_unknown_unit_is_a_line_problem() -> None:
    text = HEADER + "\nstep_time_s,3,fortnights,Blog,Llama 2 7B,H100\nstep_time_s,300,ms,Blog,Llama 2 7B,H100"
    summary, _ = parse_text(claims_csv.PARSER, text)
    assert [p.line for p in summary.problems] == [2]
    assert summary.results[0].value == pytest.approx(0.3)


def test_claims_csv_header_without_source_is_refused() -> None:
    with pytest.raises(ParseError, match="source_title or source_id"):
        parse_text(claims_csv.PARSER, "metric,value,unit,model,accelerator\nmfu,0.4,fraction,x,y")


PARSERS = [m.PARSER for m in (mlperf, hf_trainer_state, hf_trainer_log, hf_results_json, optimum_habana,
                              torchtitan, nanogpt, llmc, claims_csv)]
FRAGMENTS = hs.sampled_from([
    ":::MLLOG {", '"key": "run_stop"', "step: 3  loss: nan  tps: 1,2", "iter 1: loss 2, time 3ms, mfu -1%",
    "s:1 trl:2", "{'loss': 1}", '{"log_history": [', "metric,value,unit,source_title,model,accelerator\n",
    "\r", "\n", "}", "]", ",", "%", "train_runtime = 1:2", '{"a::b": {"gaudi2": {"train_samples_per_second": 1}}}',
])


@settings(max_examples=40, deadline=None)
@given(text=hs.lists(hs.one_of(FRAGMENTS, hs.text(max_size=30)), max_size=12).map("".join))
def test_any_text_gives_frames_or_parse_error(text: str) -> None:
    for parser_cls in PARSERS:
        parser = parser_cls("fuzz.txt")
        try:
            frame = parser.feed(text.split("\n"), 1)
            assert dict(frame.schema) == STEP_SCHEMA
            parser.finish()
        except ParseError:
            pass
