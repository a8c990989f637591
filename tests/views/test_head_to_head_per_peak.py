"""Head to head: an MFU is already per peak, so its ratio per peak is its ratio, never divided by the peaks again."""

from __future__ import annotations

import polars as pl
import pytest

from perfledger.views.hardware import head_to_head_table, per_peak_and_watt


def test_an_mfu_ratio_is_its_own_ratio_per_peak_and_a_throughput_ratio_is_scaled() -> None:
    assert per_peak_and_watt("mfu", 0.816, (989.0, 459.0), (700, 350))[0] == 0.816
    per_peak, per_watt = per_peak_and_watt("tokens_per_s_per_device", 2.0, (312.0, 989.0), (400, 700))
    assert per_peak == pytest.approx(2.0 * 312 / 989) and per_watt == pytest.approx(2.0 * 400 / 700)


def test_the_head_to_head_table_does_not_divide_an_mfu_by_the_peak_again() -> None:
    base = {"model_id": "llama2-7b", "workload": "pretrain", "precision": "bf16", "metric": "mfu",
            "n_devices": 8, "source_id": "s", "unit": "fraction", "seq_len": 4096, "global_batch": 128}
    results = pl.DataFrame([base | {"id": 1, "accelerator_id": "a", "value": 0.50},
                            base | {"id": 2, "accelerator_id": "b", "value": 0.408}])
    accelerators = pl.DataFrame([{"id": "a", "bf16_tflops": 312.0, "tdp_w": 400.0, "unit_basis": "GPU"},
                                 {"id": "b", "bf16_tflops": 989.0, "tdp_w": 700.0, "unit_basis": "GPU"}])
    row = head_to_head_table(results, accelerators, ("a", "b"), same_source=True).row(0, named=True)
    assert row["ratio (second / first)"] == pytest.approx(0.816)
    assert row["ratio per peak"] == pytest.approx(0.816)
    assert row["ratio per watt"] == pytest.approx(0.816 * 989 / 312 * 400 / 700)
