"""Headers and cells as publishers print them: a qualifier before the unit, a bracketed or full-width-bracketed
unit, a footnote marker, spaces round the slashes, a unit inside the cell, a duration in parts. Each row is read
as the figure it prints, not queued."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.vocabulary import read_metric

WORDED = (
    "source_id,locator,model,accelerator,n_devices,metric,value,unit\n"
    'pub,row 1,llama2-7b,h100-sxm,8,Vanilla TP tokens/sec,"55,000",\n'
    "pub,row 2,llama2-7b,h100-sxm,8,Performance [seq/sec],12.5,\n"
    'pub,row 3,llama2-7b,h100-sxm,8,Throughput[^1],"56,000 TPS",\n'
    "pub,row 4,llama2-7b,h100-sxm,8,Model TFLOP / sec / GPU,400,\n"
    "pub,row 5,llama2-7b,h100-sxm,8,Step time,850 ms,s\n"
    "pub,row 6,llama2-7b,h100-sxm,8,吞吐（tokens/s）,1000,\n"
    "pub,row 7,llama2-7b,h100-sxm,8,Time to train,7h 58m<br>(1.72x),\n")


def test_publisher_wording_reads_as_the_figures_it_prints(seeded: store.Engine) -> None:
    outcome = ingest_bytes(seeded, WORDED.encode(), "worded.csv")
    assert outcome.unread == {} and not outcome.rows_refused
    rows = store.results(seeded).filter(pl.col("source_id") == "pub").sort("locator")
    assert rows.select("metric", "value").rows() == [
        ("tokens_per_s", 55_000.0), ("samples_per_s", 12.5), ("tokens_per_s", 56_000.0),
        ("model_tflops_per_device", 400.0), ("step_time_s", pytest.approx(0.85)), ("tokens_per_s", 1000.0),
        ("time_to_train_s", 7 * 3600 + 58 * 60)]
    assert rows.filter(pl.col("locator") == "row 7")["note"].str.contains("7h 58m").all()


@pytest.mark.parametrize("header", ["Speedup vs tokens/s", "Tokens/s gain over baseline", "Peak TFLOPS/GPU"])
def test_a_ratio_of_another_figure_is_not_read_as_that_figure(header: str) -> None:
    assert read_metric(header) not in ("tokens_per_s", "tokens_per_s_per_device")


def test_a_cell_that_prints_two_figures_or_none_is_kept_as_printed(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,metric,value,unit\n"
            "two,l1,llama2-7b,h100-sxm,Tokens/s/GPU,31508 (29789),\n"
            "two,l2,llama2-7b,h100-sxm,Tokens/s/GPU,OOM,\n")
    outcome = ingest_bytes(seeded, text.encode(), "two.csv")
    assert outcome.unread == {"value not a number": 2}
    rows = store.results(seeded).filter(pl.col("source_id") == "two").sort("locator")
    assert rows["value"].is_null().all()
    assert [json.loads(u)["value"] for u in rows["unread"]] == ["31508 (29789)", "OOM"]


def test_a_compound_parallelism_cell_fills_the_columns_the_row_does_not_print(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,tp,Parallelism,metric,value,unit\n"
            "par,l1,llama2-7b,h100-sxm,,TP=32 DP=32 PP=1,Tokens/s/GPU,3000,\n"
            'par,l2,llama2-7b,h100-sxm,8,"TP=4, PP=4, VP=5",Tokens/s/GPU,3100,\n')
    ingest_bytes(seeded, text.encode(), "par.csv")
    rows = store.results(seeded).filter(pl.col("source_id") == "par").sort("locator")
    assert rows.select("tp", "dp", "pp").rows() == [(32, 32, 1), (8, None, 4)]  # its own tp column comes first
    assert [json.loads(a)["Parallelism"] for a in rows["attributes"]] == ["TP=32 DP=32 PP=1", "TP=4, PP=4, VP=5"]
    assert "tp 32, dp 32, pp 1 read from Parallelism: TP=32 DP=32 PP=1" in rows["note"][0]
    assert "pp 4 read from Parallelism: TP=4, PP=4, VP=5" in rows["note"][1]
