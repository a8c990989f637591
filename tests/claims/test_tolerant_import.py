"""A claims table is never refused for a label: printed headers read through data/column_names.csv, a column that
describes one printed figure kept out of the configuration, odd cells kept as printed; only a file that is not a
table gets one sentence and stores nothing."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.views.audit import AuditView, table

# A TPU table transcribed with the printed header of each figure in a column of its own, as the user did.
PRINTED_HEADER = (
    "source_id,locator,Model ID,accelerator,Number of chips,GBS,Sequence length,Precision,Printed as,metric,value,unit\n"
    "tpu,line 7,llama3.1-70b,TPU v7x,64,256,8192,bf16,Step time (seconds),step time,12.20,s\n"
    "tpu,line 7,llama3.1-70b,TPU v7x,64,256,8192,bf16,TFLOPs/sec/chip,model TFLOPS,1207.05,TFLOPs/sec/chip\n"
    "tpu,line 7,llama3.1-70b,TPU v7x,64,256,8192,bf16,Tokens/sec/chip,tokens/s/device,2686.98,Tokens/sec/chip\n")


def test_a_column_that_follows_the_metric_is_no_configuration_and_the_rows_figures_pair(seeded: store.Engine) -> None:
    outcome = ingest_bytes(seeded, PRINTED_HEADER.encode(), "tpu.csv")
    assert outcome.imported == "3 added, 0 updated, 0 unchanged" and outcome.unread == {}
    rows = store.results(seeded).filter(pl.col("source_id") == "tpu").sort("id")
    assert rows["attributes"].is_null().all()  # "Printed as" is about one figure: in its note
    assert rows["note"].str.contains("Printed as: ").all()
    assert rows.select("model_id", "accelerator_id", "n_devices", "global_batch", "seq_len").unique().rows() == [
        ("llama3-70b", "tpu-v7", 64, 256, 8192)]
    audit = table(AuditView(sources=("tpu",)), seeded)
    tflops = audit.filter(pl.col("metric") == "model_tflops_per_device").row(0, named=True)
    assert tflops["verdict"] == "other convention" and "line 7" in tflops["inputs"]  # its own row's tokens/s
    assert tflops["plausibility"] == "plausible"  # 1207 of tpu-v7's 2307 bf16 peak
    assert audit.filter(pl.col("metric") == "tokens_per_s_per_device")["verdict"].to_list() == ["consistent"]


def test_a_column_that_varies_within_a_printed_row_but_not_with_the_metric_stays_configuration(
        seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,Notes,metric,value,unit\n"
            "zoo,line 33,Qwen3-235B-A22B,H100,forced balance,TFLOPS,295,TFLOPS\n"
            "zoo,line 33,Qwen3-235B-A22B,H100,dropless,TFLOPS,237,TFLOPS\n")
    ingest_bytes(seeded, text.encode(), "zoo.csv")
    rows = store.results(seeded).filter(pl.col("source_id") == "zoo").sort("value")
    assert [json.loads(a)["Notes"] for a in rows["attributes"]] == ["dropless", "forced balance"]


def test_odd_cells_are_kept_as_printed(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,n_devices,metric,value,unit\n"
            "odd,l1,llama2-7b,h100-sxm,256 (32 nodes),mfu,41,%\n"
            "odd,l2,llama2-7b,h100-sxm,8,mfu,42,%,an extra cell\n")
    outcome = ingest_bytes(seeded, text.encode(), "odd.csv")
    assert outcome.imported == "2 added, 0 updated, 0 unchanged" and not outcome.rows_refused
    assert outcome.unread == {"n_devices not a whole number": 1}
    rows = store.results(seeded).filter(pl.col("source_id") == "odd").sort("locator")
    assert rows["n_devices"].to_list() == [None, 8]
    assert [json.loads(a) for a in rows["attributes"]] == [{"n_devices (as printed)": "256 (32 nodes)"},
                                                           {"(column 9)": "an extra cell"}]


@pytest.mark.parametrize(("text", "why"), [
    ("source_id,metric,value,unit\n", "not a claims table: no row under its header"),
    ("# only a comment\n", "not"),
])
def test_a_file_that_is_not_a_table_gets_one_sentence_and_stores_nothing(seeded: store.Engine, text: str,
                                                                         why: str) -> None:
    before = store.results(seeded).height
    with pytest.raises(PerfledgerError, match=why) as refused:
        ingest_bytes(seeded, text.encode(), "t.csv")
    assert "\n" not in str(refused.value) and str(refused.value).startswith("t.csv")
    assert store.results(seeded).height == before
