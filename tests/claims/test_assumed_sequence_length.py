"""A sequence length the row does not print is never used silently: a TFLOPS or MFU verdict that took the catalog
model's says so in its reason (and a TFLOPS verdict in its inputs), consistent or not; a row that prints one does
not."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.audit import AuditView, table

ASSUMED = "seq_len 4096 assumed: the row prints none (the catalog model's)"  # llama2-7b's catalog row


def audited(engine: store.Engine, seq_len: str) -> pl.DataFrame:
    text = ("source_id,locator,model,accelerator,n_devices,seq_len,metric,value,unit\n"
            f"noseq,l1,llama2-7b,h100-sxm,8,{seq_len},tokens/s/GPU,3000,\n"
            f"noseq,l1,llama2-7b,h100-sxm,8,{seq_len},TFLOPS/GPU,130,\n"
            f"noseq,l1,llama2-7b,h100-sxm,8,{seq_len},MFU,13,%\n")
    ingest_bytes(engine, text.encode(), "noseq.csv")
    audit = table(AuditView(sources=("noseq",)), engine)
    return audit.filter(pl.col("metric").is_in(["model_tflops_per_device", "mfu"])).sort("metric")


def test_a_verdict_on_the_catalogs_sequence_length_says_it_assumed_it(seeded: store.Engine) -> None:
    audit = audited(seeded, "")
    assert audit.height == 2 and set(audit["verdict"]) <= {"consistent", "other convention", "inconsistent"}
    assert audit["reason"].str.contains(ASSUMED, literal=True).all()
    tflops = audit.filter(pl.col("metric") == "model_tflops_per_device").row(0, named=True)
    assert ASSUMED in tflops["inputs"]


@pytest.mark.parametrize("seq_len", ["4096", "2048"])
def test_a_printed_sequence_length_is_no_assumption(seeded: store.Engine, seq_len: str) -> None:
    audit = audited(seeded, seq_len)
    assert audit.height == 2 and not audit["reason"].fill_null("").str.contains("assumed").any()
    assert not audit["inputs"].fill_null("").str.contains("assumed").any()
