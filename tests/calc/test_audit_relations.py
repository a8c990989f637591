"""The relations audit judges published rows only: a run's own step time and tokens/s are recomputed on its own
page, never called inconsistent with each other as if a publisher had printed them."""

from __future__ import annotations

import polars as pl

from perfledger.calc.audit_relations import audit_relations


def printed_row(source_id: str | None, tokens_per_s: float) -> pl.DataFrame:
    cells = {"model_id": "llama2-7b", "accelerator_id": "h100-sxm", "model": None, "accelerator": None,
             "n_devices": 8, "global_batch": 64, "seq_len": 4096, "locator": None, "workload": "pretrain",
             "source_id": source_id, "run_id": None if source_id else 7}
    return pl.DataFrame([cells | {"id": 1, "metric": "step_time_s", "value": 4.0},
                         cells | {"id": 2, "metric": "tokens_per_s_per_device", "value": tokens_per_s}])


def test_a_published_rows_tokens_per_s_is_judged_against_its_own_step_time() -> None:
    audit = audit_relations(printed_row("blog", 16_384.0))  # 64 x 4096 / 4 / 8 = 8192: twice over
    assert audit["verdict"].to_list() == ["inconsistent"]
    assert audit["relation"].item() == "tokens_per_s_per_device = global_batch x seq_len / (step_time_s x n_devices)"


def test_a_runs_own_figures_are_not_judged_as_a_printed_row() -> None:
    assert audit_relations(printed_row(None, 16_384.0)).height == 0
