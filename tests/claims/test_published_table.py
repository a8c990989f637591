"""A real published throughput table imported as printed: every row stored, linked, audited, re-import a no-op."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.audit import AuditView, table

README = Path(__file__).parents[1] / "fixtures" / "claims" / "llm-foundry-benchmarking-README.md"
COLUMNS = ("MFU", "%", "mfu"), ("HFU", "%", "hfu"), ("Model TFLOP", "TFLOP/s per GPU", "model_tflops_per_device"), \
    ("Throughput (T/s/GPU)", "tokens/s/GPU", "tokens_per_s_per_device")


def claims_csv(model: Callable[[str], str] = "MPT-{}".format) -> tuple[bytes, int]:
    """The README's tables as a claims CSV, names and numbers as printed; how many table rows. `model` writes the
    model cell ("70b") as the claim's model name."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["source_id", "source_title", "locator", "metric", "value", "unit", "model", "accelerator",
                "n_devices", "precision", "seq_len", "global_batch", "micro_batch", "strategy"])
    header: list[str] = []
    rows = 0
    for lineno, line in enumerate(README.read_text().splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|  Model"):
            header = cells
        elif line.startswith("|  ") and header and cells[0][0].isdigit():
            row = dict(zip(header, cells, strict=True))
            rows += 1
            for column, unit, metric in COLUMNS:
                w.writerow(["llm_foundry_benchmarks", "llm-foundry MPT Training Benchmarks", f"README.md line {lineno}",
                            metric, row[column], unit, model(row["Model"]), row["GPU"], row["# GPUs"],
                            row["Precision"], row["SeqLen (T)"], row["GlobalBatchSize"], row["MicroBatchSize"],
                            row["Sharding Strategy"]])
    return out.getvalue().encode(), rows


def test_every_row_of_the_llm_foundry_table_is_stored_linked_and_audited(seeded: store.Engine) -> None:
    data, rows = claims_csv()
    assert rows == 216
    outcome = ingest_bytes(seeded, data, "mpt_benchmarks.csv")
    assert not outcome.rows_refused, outcome.problems[:5]
    assert outcome.imported == f"{rows * 4} added, 0 updated, 0 unchanged"
    stored = store.results(seeded, metric=["mfu", "hfu", "model_tflops_per_device", "tokens_per_s_per_device"])
    stored = stored.filter(pl.col("source_id") == "llm_foundry_benchmarks")
    assert stored.height == rows * 4
    linked = stored.filter(pl.col("model_id").is_not_null() & pl.col("accelerator_id").is_not_null()).height
    assert linked / stored.height >= 0.98
    audit = table(AuditView(), seeded).filter(pl.col("source_id") == "llm_foundry_benchmarks")
    mfu = audit.filter(pl.col("metric") == "mfu")
    assert mfu.height == rows
    explained = mfu.filter(pl.col("verdict").is_in(["consistent", "other convention"])).height
    assert explained / rows >= 0.95, mfu.filter(~pl.col("verdict").is_in(["consistent", "other convention"]))
    reasons = audit.filter(pl.col("verdict") != "consistent")["reason"]
    assert reasons.is_null().sum() == 0 and (reasons.str.len_chars() > 0).all()


def test_reimporting_the_table_changes_nothing_and_a_correction_updates(seeded: store.Engine) -> None:
    data, rows = claims_csv()
    ingest_bytes(seeded, data, "mpt_benchmarks.csv")
    again = ingest_bytes(seeded, data, "mpt_benchmarks.csv")
    assert again.imported == f"0 added, 0 updated, {rows * 4} unchanged"
    corrected = data.replace(b",41.25,%,", b",41.5,%,", 1)
    outcome = ingest_bytes(seeded, corrected, "mpt_benchmarks_v2.csv")
    assert outcome.imported == f"0 added, 1 updated, {rows * 4 - 1} unchanged"
    count = store.results(seeded, metric=["mfu"]).filter(pl.col("source_id") == "llm_foundry_benchmarks").height
    assert count == rows
