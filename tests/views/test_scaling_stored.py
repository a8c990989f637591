"""Scaling's published rows: a user's own scaling and sensitivity claims show whatever their accelerator or
strategy; only the ratios a Speedups preset shows (data/speedup_presets.csv) are read there instead."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import store, views
from perfledger.records import ResultRecord

OURS = {"id": "ours_h200_cluster", "kind": "docs", "title": "Our H200 cluster's scaling runs"}


def _ours(engine: Engine) -> None:
    common = {"source_id": OURS["id"], "accelerator_id": "h200", "model_id": "llama2-70b", "workload": "pretrain",
              "strategy": "fsdp", "framework": "nemo"}
    store.add_results(engine, [
        ResultRecord(metric="scaling_efficiency", value=0.91, unit="fraction", n_devices=256, **common),
        ResultRecord(metric="relative_throughput", value=1.12, unit="x", n_devices=64,
                     baseline="the same run without activation offloading", **common),
    ], sources=[OURS])


def _source_rows(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    return frame.filter(pl.col("source") == source)


def test_a_users_own_h200_fsdp_claims_show_in_scaling_and_sensitivity(writable_engine: Engine) -> None:
    _ours(writable_engine)
    scaling = views.table("scaling", views.ScalingView(), writable_engine)
    sensitivity = views.table("scaling", views.ScalingView(section="sensitivity"), writable_engine)
    (efficiency,) = _source_rows(scaling, OURS["id"]).to_dicts()
    assert (efficiency["accelerator"], efficiency["devices"], efficiency["scaling efficiency"]) == ("h200", 256, 0.91)
    (ratio,) = _source_rows(sensitivity, OURS["id"]).to_dicts()
    assert (ratio["accelerator"], ratio["value"]) == ("h200", 1.12)


def test_the_ratios_speedups_presets_show_stay_out_of_scaling(seeded_engine: Engine) -> None:
    shown = pl.concat([views.table("scaling", views.ScalingView(section=s, workload="all"), seeded_engine)
                       for s in ("scaling", "sensitivity")])
    # the NeMo blog's ratios are H200 vs A100, FSDP vs 3D and RLHF ± TensorRT-LLM (Speedups presets), but for one
    # microbenchmark (the optimizer-state operations), which no preset shows
    assert _source_rows(shown, "nv_blog_nemo_h200_2023")["workload"].to_list() == ["microbench"]
    speedups = pl.concat([views.table("speedups", views.SpeedupView(preset=p), seeded_engine)
                          for p in ("nemo", "fsdp", "rlhf")])
    stored_ids = set(speedups.filter(pl.col("kind").str.starts_with("stored"))["candidate result id"].to_list())
    assert len(stored_ids) == 12 and not stored_ids & set(shown["result id"].to_list())
