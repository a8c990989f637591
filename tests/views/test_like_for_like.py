"""Like for like: the default comparing views never put a pretraining figure beside a fine-tuning one, scaling
series never join workloads, the accelerators page shows every seed accelerator, and a head-to-head pairs only
like-for-like rows."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import views
from perfledger.calc.pairing import like_for_like_pairs, ratio_summary, scaling_kind

SEED_ACCELERATORS = ("a100-80gb", "a800-80gb", "h100-sxm", "h200", "mi250", "gaudi2", "cs-2", "sn30", "bow-ipu")


def test_default_accelerators_view_compares_no_pretraining_row_with_a_fine_tuning_row(seeded_engine: Engine) -> None:
    table = views.table("accelerators", views.AcceleratorView(), seeded_engine)
    assert table.height > 0
    assert set(table["workload"]) == {"pretrain"}


def test_default_scaling_series_each_hold_one_workload(seeded_engine: Engine) -> None:
    table = views.table("scaling", views.ScalingView(), seeded_engine)
    assert set(table["workload"]) == {"pretrain"}
    every = views.table("scaling", views.ScalingView(workload="all"), seeded_engine)
    computed = views.rows_of_kind(every, "computed")
    per_series = computed.group_by("series").agg(pl.col("workload").n_unique().alias("n"))
    assert per_series["n"].max() == 1


def test_lora_rows_are_no_longer_a_scaling_series_with_sft_rows(seeded_engine: Engine) -> None:
    every = views.table("scaling", views.ScalingView(workload="all", models=("llama2-70b",)), seeded_engine)
    computed = views.rows_of_kind(every, "computed")
    assert computed.filter(pl.col("workload").is_in(["sft", "lora_finetune"])).height == 0


def test_scaling_says_weak_or_strong() -> None:
    strong = [{"global_batch": 256, "n_devices": n} for n in (8, 16)]
    weak = [{"global_batch": 8 * n, "n_devices": n} for n in (8, 16)]
    assert scaling_kind(strong).startswith("strong") and scaling_kind(weak) == "weak (8 per device)"
    assert scaling_kind([{"global_batch": 64, "n_devices": 8}, {"global_batch": 100, "n_devices": 16}]) == ""


def test_mixing_workloads_is_asked_for_and_said(seeded_engine: Engine) -> None:
    assert views.AcceleratorView().caveat() == ""
    assert "mixed" in views.AcceleratorView(workload="all").caveat()
    mixed = views.table("accelerators", views.AcceleratorView(workload="all"), seeded_engine)
    assert {"pretrain", "lora_finetune"} <= set(mixed["workload"])


def test_every_seed_accelerator_is_in_the_catalog_view_with_what_is_stored(seeded_engine: Engine) -> None:
    table = views.table("accelerators", views.AcceleratorView(section="catalog"), seeded_engine)
    rows = {r["accelerator"]: r for r in table.to_dicts()}
    for acc in SEED_ACCELERATORS:
        assert rows[acc]["stored results"] > 0, acc
    for acc in ("gaudi2", "cs-2", "sn30", "mi250", "bow-ipu"):
        assert "gpt2-xl" in rows[acc]["what is stored"], acc


def test_head_to_head_pairs_h200_with_a100_on_the_nemo_figures(seeded_engine: Engine) -> None:
    table = views.table("accelerators", views.AcceleratorView(section="head"), seeded_engine)
    tokens = table.filter(pl.col("metric") == "tokens_per_s_per_device").sort("model")
    assert [round(x, 1) for x in tokens["ratio (second / first)"]] == [4.0, 4.2, 3.7]
    assert set(table["workload"]) == {"pretrain"}
    summary = views.hardware.summaries(table)
    assert any(line.startswith("h200 vs a100-80gb on tokens_per_s_per_device: median 4.00x") for line in summary)


def test_like_for_like_pairs_need_the_same_workload_and_precision() -> None:
    base = {"model_id": "m", "workload": "pretrain", "precision": "bf16", "metric": "tokens_per_s_per_device",
            "n_devices": 8, "source_id": "s", "accelerator_id": "a"}
    rows = [base, base | {"accelerator_id": "b", "n_devices": 16},
            base | {"accelerator_id": "b", "workload": "lora_finetune"},
            base | {"accelerator_id": "b", "precision": "fp8"}, base | {"accelerator_id": "b", "source_id": "t"}]
    assert like_for_like_pairs(rows, "a", "b") == [(rows[0], rows[1])]
    assert len(like_for_like_pairs(rows, "a", "b", same_source=False)) == 2
    summary = ratio_summary([1.0, 3.0, 2.0, None])
    assert summary is not None and (summary.median, summary.low, summary.high, summary.n) == (2.0, 1.0, 3.0, 3)


def test_the_h200_mfu_the_audit_calls_implausible_carries_its_warning(seeded_engine: Engine) -> None:
    table = views.table("accelerators", views.AcceleratorView(norm="mfu"), seeded_engine)
    h200 = table.filter(pl.col("accelerator") == "h200").to_dicts()[0]
    assert round(h200["normalized"], 3) == 0.845
    assert h200["warning"].startswith("audit: implausible")


def test_the_audit_says_why_lora_tflops_read_four_sixths(seeded_engine: Engine) -> None:
    table = views.table("audit", views.AuditView(workload="lora_finetune", verdicts=("inconsistent",)), seeded_engine)
    assert table.height > 0
    assert all("4/6" in e for e in table["explanation"])


def test_counts_are_typed_as_300b_or_1_2t() -> None:
    from perfledger.views._shared import parse_count, si

    assert parse_count("300B") == 300e9 and parse_count("1.2T") == 1.2e12 and parse_count("3e11") == 3e11
    assert parse_count("1,000,000") == 1e6 and si(parse_count("300B")) == "300B"
    for bad in ("", "lots", "-5B", "0"):
        try:
            parse_count(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
