"""Two real 2026 tables perfledger had never read, imported as printed (tests/fixtures/claims/PROVENANCE.md):
NeMo RL's performance summary (GRPO and SWE runs on H100 and GB200, with the page's own Tokens/sec/GPU formula) and
the tpu-recipes Ironwood training table (step time, TFLOPs/sec/chip, tokens/sec/chip). Every printed row is stored;
every relation their columns allow is checked, each verdict judged here again by plain arithmetic on the cells."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.accelerators import AcceleratorView
from perfledger.views.accelerators import table as accelerators_table
from perfledger.views.audit import AuditView, table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claims"
NEMO_RL, TPU = FIXTURES / "nemo_rl_performance_v06.csv", FIXTURES / "tpu_recipes_ironwood.csv"
NEMO_SOURCE, TPU_SOURCE = "nemo_rl_performance_summary", "tpu_recipes_ironwood_training"


def printed_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO("".join(line for line in path.read_text().splitlines(True)
                                                   if not line.startswith("#")))))


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def audit_of(engine: store.Engine, source: str) -> pl.DataFrame:
    return table(AuditView(), engine).filter(pl.col("source_id") == source)


@pytest.mark.parametrize(("path", "source", "unread"), [(NEMO_RL, NEMO_SOURCE, {}),
                                                        (TPU, TPU_SOURCE, {"value not a number": 1})])
def test_every_printed_row_of_a_development_table_is_stored_and_a_reimport_is_a_no_op(
        seeded: store.Engine, path: Path, source: str, unread: dict[str, int]) -> None:
    rows = printed_rows(path)
    outcome = ingest_bytes(seeded, path.read_bytes(), path.name)
    assert not outcome.rows_refused and outcome.unread == unread
    assert outcome.imported == f"{len(rows)} added, 0 updated, 0 unchanged"
    assert store.results(seeded).filter(pl.col("source_id") == source).height == len(rows)
    assert ingest_bytes(seeded, path.read_bytes(), path.name).imported == f"0 added, 0 updated, {len(rows)} unchanged"


def test_each_nemo_rl_tokens_per_gpu_is_judged_by_the_pages_own_formula(seeded: store.Engine) -> None:
    ingest_bytes(seeded, NEMO_RL.read_bytes(), NEMO_RL.name)
    audit = audit_of(seeded, NEMO_SOURCE).sort("claim_id")
    by_line: dict[str, dict[str, float]] = {}
    for row in printed_rows(NEMO_RL):
        by_line.setdefault(row["locator"], {"gbs": number(row["G-GBS"]), "seq": number(row["G-Average Seq len"]),
                                            "gpus": number(row["#-GPUs"])})[row["metric"]] = number(row["value"])
    expected = {line: c["Tokens / sec / GPU"] / (c["gbs"] * c["seq"] / c["Total Step time(s)"] / c["gpus"]) - 1
                for line, c in by_line.items()}
    assert audit.height == len(expected) == 19 and set(audit["metric"]) == {"tokens_per_s_per_device"}
    stored = store.results(seeded).filter(pl.col("source_id") == NEMO_SOURCE)
    locator = dict(stored.select("id", "locator").iter_rows())
    for row in audit.iter_rows(named=True):
        off = expected[locator[row["claim_id"]]]
        assert row["rel_diff"] == pytest.approx(off, abs=1e-9)
        assert row["verdict"] == ("consistent" if abs(off) <= 0.05 else "inconsistent")
        assert "NVIDIA-NeMo/RL docs/about/performance-summary.md" in row["reason"]
        assert row["relation"] == ("publisher's formula: tokens_per_s_per_device = generation_batch x avg_seq_len / "
                                   "(step_time_s x n_devices)")
        assert row["inputs"].startswith("result ") and "step_time_s" in row["inputs"] and "generation_batch" in \
            row["inputs"]
    off = sorted(abs(v) for v in expected.values())
    assert sum(v > 0.05 for v in off) == 9 and 0.14 < off[-9] and off[-2] < 0.19 and off[-1] > 0.87  # SWE: 7.8x


def test_rl_rows_are_rl_post_training_and_never_a_pretraining_mfu(seeded: store.Engine) -> None:
    ingest_bytes(seeded, NEMO_RL.read_bytes(), NEMO_RL.name)
    stored = store.results(seeded).filter(pl.col("source_id") == NEMO_SOURCE)
    assert set(stored["workload"]) == {"rlhf"}
    assert stored["note"].str.contains("workload rlhf read from its").all()
    assert set(stored["precision"]) == {"bf16", "fp8"}
    assert set(stored["precision_as_printed"]) == {"Training BF16, Generation BF16", "Generation FP8, Training FP8"}
    assert audit_of(seeded, NEMO_SOURCE).filter(pl.col("metric") != "tokens_per_s_per_device").height == 0
    mixed = accelerators_table(AcceleratorView(workload="all", norm="mfu", models=()), seeded)
    rl = mixed.filter(pl.col("source") == NEMO_SOURCE)
    assert rl.height == 19 and rl["normalized"].is_null().all()
    assert rl["why"].str.contains("RL post-training step throughput").all()
    assert rl["warning"].str.contains("not comparable with pretraining rows").all()
    pretraining = accelerators_table(AcceleratorView(workload="pretrain", norm="mfu", models=()), seeded)
    assert pretraining.filter(pl.col("source") == NEMO_SOURCE).height == 0


def test_each_tpu_row_is_checked_against_its_own_cells(seeded: store.Engine) -> None:
    ingest_bytes(seeded, TPU.read_bytes(), TPU.name)
    audit = audit_of(seeded, TPU_SOURCE)
    cells: dict[str, dict[str, str]] = {}
    for row in printed_rows(TPU):
        cells.setdefault(row["locator"], dict(row))[row["metric"]] = row["value"]
    stored = store.results(seeded).filter(pl.col("source_id") == TPU_SOURCE)
    locator = dict(stored.select("id", "locator").iter_rows())
    throughput = audit.filter(pl.col("metric") == "tokens_per_s_per_device")
    assert throughput.height == 21  # wan2.1-14b prints "N/A"
    for row in throughput.iter_rows(named=True):
        c = cells[locator[row["claim_id"]]]
        by_hand = number(c["GBS"]) * number(c["Sequence length"]) / number(c["Step time (seconds)"]) \
            / number(c["Number of chips"])
        assert row["recomputed"] == pytest.approx(by_hand) and row["verdict"] == "consistent"
    tflops = audit.filter(pl.col("metric") == "model_tflops_per_device")
    assert tflops.height == 22
    paired = tflops.filter(pl.col("verdict") != "unchecked")
    for row in paired.iter_rows(named=True):  # each TFLOPS claim against the tokens/s printed in its own row
        assert locator[row["claim_id"]] in row["inputs"]
    assert set(paired["verdict"]) == {"other convention"} and paired["reason"].str.contains("causal").all()
    moe = paired.filter(pl.col("model_id").is_in(["deepseek-v3", "gpt-oss-120b"]))
    assert moe.height == 6 and moe["relation"].str.contains("shape from maxtext_model_configs").all()
    unchecked = tflops.filter(pl.col("verdict") == "unchecked")
    assert unchecked["reason"].str.contains("is not in the catalog").all() and unchecked.height == 6


def test_the_tpu_tables_precisions_and_names_read_as_printed(seeded: store.Engine) -> None:
    outcome = ingest_bytes(seeded, TPU.read_bytes(), TPU.name)
    stored = store.results(seeded).filter(pl.col("source_id") == TPU_SOURCE)
    assert dict(stored.select("precision_as_printed", "precision").unique().iter_rows()) == {"bf16": "bf16",
                                                                                          "fp8_full": "fp8"}
    assert set(stored["metric"]) == {"step_time_s", "model_tflops_per_device", "tokens_per_s_per_device", "printed"}
    near = {u.name: u.nearest for u in outcome.unlinked}
    assert near["Ironwood TPU"][0] == "tpu-v7" and near["gemma4-26b"] == () and near["gemma4-2b"] == ()
