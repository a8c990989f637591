"""NVIDIA's DGX Cloud Benchmarking "Expected Performance" of Llama 3.1 70B, a table nobody here tuned on, imported as
printed (tests/fixtures/claims/PROVENANCE.md): metric names and units as the page prints them, every number stored, and
each MFU and time-to-train figure checked against its own column's step time (NVIDIA's own arithmetic: GBS x 8192 /
step time, MFU against the dense peak of the stated precision) and judged consistent, by hand as by the audit."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.audit import AuditView, table

TABLE = Path(__file__).parents[1] / "fixtures" / "claims" / "dgxc_llama31_70b.csv"
SOURCE = "dgxc_benchmarking_llama31_70b"


def test_every_printed_number_of_the_dgxc_table_is_stored(seeded: store.Engine) -> None:
    outcome = ingest_bytes(seeded, TABLE.read_bytes(), TABLE.name)
    assert not outcome.rows_refused, outcome.problems[:5]
    assert outcome.imported == "48 added, 0 updated, 0 unchanged"
    stored = store.results(seeded, metric=["step_time_s", "tokens_per_s", "mfu", "time_to_train_s"])
    counts = dict(stored.filter(pl.col("source_id") == SOURCE).group_by("metric").len().iter_rows())
    assert counts == {"step_time_s": 12, "tokens_per_s": 12, "mfu": 12, "time_to_train_s": 12}


def test_each_mfu_and_time_to_train_is_consistent_with_its_own_columns_step_time(seeded: store.Engine) -> None:
    ingest_bytes(seeded, TABLE.read_bytes(), TABLE.name)
    audit = table(AuditView(), seeded).filter(pl.col("source_id") == SOURCE)
    assert audit.height == 48  # 12 MFU, 12 time to train, each column's tokens/s against its step time, and its
    assert audit["verdict"].to_list() == ["consistent"] * 48  # global batch = micro batch x DP x GA
    assert set(audit.filter(pl.col("metric") == "mfu")["plausibility"]) == {"plausible"}
    derived = audit.filter(pl.col("metric").is_in(["mfu", "time_to_train_s"]))
    assert derived.height == 24 and derived["inputs"].str.contains("tokens/s derived from its step time").all()
    printed = audit.filter(pl.col("metric") == "tokens_per_s")
    assert set(printed["relation"]) == {"tokens_per_s = global_batch x seq_len / step_time_s"}
    bf16_64 = audit.filter(pl.col("metric") == "mfu", pl.col("n_devices") == 64, pl.col("precision") == "bf16")
    assert bf16_64["recomputed"][0] == pytest.approx(128 * 3.94e15 / 14.61 / 64 / 989e12, rel=0.005)
    assert 'column "Throughput on 64x H100 GPUs (GBS=128)"' in bf16_64["inputs"][0]
    days = audit.filter(pl.col("metric") == "time_to_train_s", pl.col("n_devices") == 2048, pl.col("precision") == "fp8")
    assert days["recomputed"][0] / 86400 == pytest.approx(3.79, abs=0.01)
