"""Claims CSV rows become results, every one: a cell the vocabulary cannot read is kept as printed and counted,
each row's line number kept."""

from __future__ import annotations

import json

import pytest

from ingest.parsers import claims_csv
from tests.ingest.parsers.helpers import parse_text

HEADER = "metric,value,unit,source_title,model,accelerator"


def test_claims_csv_unknown_metric_on_line_3_is_kept_as_printed_on_line_3() -> None:
    text = f"{HEADER}\nmfu,45,%,Blog,Llama 2 7B,H100\nspeed,9,x,Blog,Llama 2 7B,H100"
    summary, _ = parse_text(claims_csv.PARSER, text, "claims.csv")
    assert summary.problems == () and summary.meta["lines"] == [2, 3]
    assert summary.results[0].value == pytest.approx(0.45)  # % -> fraction
    assert (summary.results[1].metric, summary.results[1].value) == ("printed", 9.0)
    assert json.loads(summary.results[1].unread or "{}") == {"metric": "speed"}
    assert summary.meta["unread"] == {"metric not read": 1}


def test_claims_csv_unknown_unit_is_kept_as_printed_and_counted() -> None:
    text = HEADER + "\nstep_time_s,3,fortnights,Blog,Llama 2 7B,H100\nstep_time_s,300,ms,Blog,Llama 2 7B,H100"
    summary, _ = parse_text(claims_csv.PARSER, text)
    assert (summary.results[0].metric, summary.results[0].unit) == ("printed", "fortnights")
    assert summary.results[1].value == pytest.approx(0.3)
    assert summary.meta["unread"] == {"unit not read": 1}


def test_claims_csv_rows_without_a_source_column_are_the_files_own() -> None:
    summary, _ = parse_text(claims_csv.PARSER, "metric,value,unit,model,accelerator\nmfu,0.4,fraction,x,y",
                            "vendor table.csv")
    assert summary.results[0].source_id == "vendor_table_csv" and summary.results[0].value == 0.4
