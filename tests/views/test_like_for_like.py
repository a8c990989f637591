"""Like for like: the default comparing views never put a pretraining figure beside a fine-tuning one, scaling
series never join workloads, the accelerators page shows every seed accelerator, and a head-to-head pairs rows of
the same model and metric and judges each pair by the one like-for-like rule Speedups uses."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import views
from perfledger.calc import like_for_like
from perfledger.calc.pairing import ratio_summary, same_figure_pairs, scaling_kind

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
    assert any(line.startswith("a100-80gb vs h200 on tokens_per_s_per_device: h200 / a100-80gb median 4.00x")
               for line in summary), summary


def test_the_pair_is_named_in_the_order_of_its_ratio(seeded_engine: Engine) -> None:
    """The ratio is the second over the first: the pair names the first first, as the value columns do."""
    table = views.table("accelerators", views.AcceleratorView(section="head"), seeded_engine)
    for row in table.to_dicts():
        first, second = row["pair"].split(" vs ")
        assert (first, second) == ("a100-80gb", "h200")
        assert row["ratio (second / first)"] == row["second value"] / row["first value"]


def test_head_to_head_and_speedups_judge_the_nemo_70b_pair_alike(seeded_engine: Engine) -> None:
    """8 H200 on NeMo 24.01 against 32 A100 on NeMo 23.08, precision unstated: not like for like on both pages,
    for the same named reasons."""
    head = views.table("accelerators", views.AcceleratorView(section="head"), seeded_engine)
    pair = head.filter(model="llama2-70b", metric="tokens_per_s_per_device").row(0, named=True)
    assert pair["like for like"] == "not like for like: precision, devices, framework version"
    speedups = views.table("speedups", views.SpeedupView(), seeded_engine)
    row = speedups.filter(model="llama2-70b", kind="computed from two stored results").row(0, named=True)
    assert (row["baseline result id"], row["candidate result id"]) == (pair["first result id"], pair["second result id"])
    assert like_for_like.aspects_in([row["caveats"]]) == ["precision", "devices", "framework version"]
    assert views.speedups.not_like_for_like(speedups) == "Not like for like: precision, devices, framework version"


def test_pairs_on_the_same_figure_are_judged_like_for_like_only_when_every_aspect_agrees() -> None:
    base = {"model_id": "m", "workload": "pretrain", "precision": "bf16", "metric": "tokens_per_s_per_device",
            "n_devices": 8, "source_id": "s", "accelerator_id": "a", "framework_version": "v1"}
    rows = [base, base | {"accelerator_id": "b"}, base | {"accelerator_id": "b", "n_devices": 16},
            base | {"accelerator_id": "b", "workload": "lora_finetune"},
            base | {"accelerator_id": "b", "precision": "fp8"}, base | {"accelerator_id": "b", "source_id": "t"},
            base | {"accelerator_id": "b", "metric": "mfu"}]
    pairs = same_figure_pairs(rows, "a", "b")
    assert [b for _, b in pairs] == rows[1:5]
    assert len(same_figure_pairs(rows, "a", "b", same_source=False)) == 5
    verdicts = [like_for_like.verdict(like_for_like.differences(a, b)) for a, b in pairs]
    assert verdicts == ["like for like", "not like for like: devices", "not like for like: workload",
                        "not like for like: precision"]
    unstated = like_for_like.differences(base | {"precision": "unstated"}, base | {"precision": "unstated"})
    assert like_for_like.verdict(unstated) == "not like for like: precision"
    summary = ratio_summary([1.0, 3.0, 2.0, None])
    assert summary is not None and (summary.median, summary.low, summary.high, summary.n) == (2.0, 1.0, 3.0, 3)


def test_the_h200_mfu_the_audit_calls_implausible_carries_its_warning(seeded_engine: Engine) -> None:
    table = views.table("accelerators", views.AcceleratorView(norm="mfu"), seeded_engine)
    h200 = table.filter(pl.col("accelerator") == "h200").to_dicts()[0]
    assert round(h200["normalized"], 3) == 0.845
    assert h200["warning"].startswith("precision unstated: plausible only in FP8 (42.")


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
