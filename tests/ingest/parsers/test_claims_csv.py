"""Claims CSV rows become results or line problems, each on its own line number."""

from __future__ import annotations

import pytest

from ingest.parsers import claims_csv
from perfledger.errors import ParseError
from tests.ingest.parsers.helpers import parse_text

HEADER = "metric,value,unit,source_title,model,accelerator"


def test_claims_csv_bad_metric_on_line_3_is_reported_on_line_3() -> None:
    text = f"{HEADER}\nmfu,45,%,Blog,Llama 2 7B,H100\nspeed,9,x,Blog,Llama 2 7B,H100"
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
