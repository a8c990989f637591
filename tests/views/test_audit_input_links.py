"""Each audit verdict names its inputs, and the page links them to the Sources page rows of their source."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import views
from perfledger.calc.pairing import describe_input, input_refs
from perfledger.views import links


def test_input_refs_read_back_what_describe_input_wrote() -> None:
    text = "; ".join([describe_input(12, "nemo_perf_2407", "Table 2"), describe_input(3, "zoo", None, True)])
    assert input_refs(text) == [(12, "nemo_perf_2407"), (3, "zoo")]
    assert input_refs(None) == []


def test_every_audited_verdict_with_inputs_gets_the_source_of_its_first_input(seeded_engine: Engine) -> None:
    table = views.with_input_rows(views.table("audit", views.AuditView(), seeded_engine))
    used = table.filter(pl.col("inputs").is_not_null())
    assert used.height and used["input_source"].null_count() == 0
    scaling = used.filter(pl.col("metric") == "relative_throughput").row(0, named=True)
    assert scaling["input_source"] == scaling["source_id"]  # scaling verdicts carry inputs too
    assert table.filter(pl.col("inputs").is_null())["input_source"].null_count() == \
        table.filter(pl.col("inputs").is_null()).height
    assert links.source(scaling["input_source"]).href == f"/sources?src={scaling['source_id']}"
