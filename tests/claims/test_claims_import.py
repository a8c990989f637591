"""Claims import: per-row refusals with FILE:LINE, curated sources closed, imported sources marked."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.vocabulary import Metric, normalize_precision, read_precision, unit_factor

HEADER = "source_id,metric,value,unit,model,accelerator,precision,evidence\n"


def test_publisher_spellings_are_read_alike_by_every_reader() -> None:
    assert normalize_precision("amp_bf16") == "bf16" and normalize_precision("amp_fp8") == "fp8"
    mixed = read_precision("BF16 + Float8 linears")
    assert mixed is not None and mixed.precision.value == "fp8" and mixed.meaning
    assert unit_factor(Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOP/s per GPU") == 1.0
    assert unit_factor(Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOPs/GPU") == 1.0
    assert unit_factor(Metric.MFU, "% (BF16 MFU)") == 0.01


def test_rows_the_vocabulary_cannot_read_are_stored_as_printed_and_counted_by_reason(seeded: store.Engine) -> None:
    text = HEADER + ("mine,mfu,41,%,MPT-7b,h100_80gb,amp_bf16,published\n"
                     "mine,mfu,lots,%,MPT-7b,h100_80gb,amp_bf16,reported\n"
                     "mine,mfu,41,furlongs,MPT-7b,h100_80gb,amp_bf16,reported\n"
                     "mine,mfu,41,%,MPT-7b,h100_80gb,amp_bf16,hearsay\n")
    outcome = ingest_bytes(seeded, text.encode(), "c.csv")
    assert not outcome.rows_refused
    assert outcome.unread == {"value not a number": 1, "unit not read": 1, "evidence not read": 1}
    assert outcome.imported == "4 added, 0 updated, 0 unchanged"
    rows = store.results(seeded).filter(pl.col("source_id") == "mine").sort("id")
    assert rows["metric"].to_list() == ["mfu", "printed", "printed", "mfu"]
    assert rows["value"].to_list() == [pytest.approx(0.41), None, 41.0, pytest.approx(0.41)]
    assert [json.loads(u) if u else None for u in rows["unread"]] == [None, {"value": "lots"}, {"unit": "furlongs"},
                                                                      {"evidence": "hearsay"}]
    assert json.loads(rows["printed"][2])["unit"] == "furlongs"
    again = ingest_bytes(seeded, text.encode(), "c.csv")
    assert again.imported == "0 added, 0 updated, 4 unchanged"


def test_an_import_cannot_add_figures_under_a_curated_source(seeded: store.Engine) -> None:
    curated = store.sources(seeded)["id"][0]
    text = HEADER + f"{curated},tokens_per_s_per_device,999,tokens/s/GPU,llama2-7b,h100-sxm,bf16,reported\n" \
        + "my_bench,tokens_per_s_per_device,999,tokens/s/GPU,llama2-7b,h100-sxm,bf16,reported\n"
    outcome = ingest_bytes(seeded, text.encode(), "c.csv")
    assert outcome.refused == {"curated source": 1}
    assert any(p.startswith("c.csv:2: source") and "curated" in p for p in outcome.problems)
    mine = store.sources(seeded).filter(pl.col("id") == "my_bench").row(0, named=True)
    assert mine["kind"] == "cli" and "imported via cli" in mine["evidence"]


def test_delete_removes_an_imported_source_and_refuses_a_curated_one(seeded: store.Engine, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from perfledger.cli import main

    text = HEADER + "my_bench,tokens_per_s_per_device,999,tokens/s/GPU,llama2-7b,h100-sxm,bf16,reported\n"
    ingest_bytes(seeded, text.encode(), "c.csv")
    url = str(seeded.url)
    curated = store.sources(seeded).filter(pl.col("kind") != "cli")["id"][0]
    assert main(["delete", "--source", curated, "--db", url]) == 2
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "s3cret")
    assert main(["delete", "--source", "my_bench", "--db", url, "--token", "wrong"]) == 2
    assert main(["delete", "--source", "my_bench", "--db", url, "--token", "s3cret"]) == 0
    assert store.results(seeded).filter(pl.col("source_id") == "my_bench").height == 0
