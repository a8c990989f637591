"""Which baseline a candidate meets, a scaling series against its smallest device count, and normalisation."""

from __future__ import annotations

import pytest

from perfledger.calc.normalise import Basis, normalised, vs_measured
from perfledger.calc.pairing import scaling_series, speedup_pairs


def _row(model: str | None, n: int | None, value: float = 1.0, metric: str = "tokens_per_s_per_device") -> dict[str, object]:
    return {"model_id": model, "n_devices": n, "value": value, "metric": metric}


def test_a_candidate_meets_the_baseline_with_its_device_count_else_the_first_of_its_model() -> None:
    b8, b16, other = _row("m", 8), _row("m", 16), _row("x", 16)
    c16, c32, orphan, nameless = _row("m", 16), _row("m", 32), _row("y", 16), _row(None, 16)
    pairs = speedup_pairs([b8, b16, other, _row(None, 16)], [c16, c32, orphan, nameless])
    assert pairs == [(b16, c16), (b8, c32)]


def test_a_scaling_series_is_measured_against_its_smallest_device_count() -> None:
    rows = [_row("m", 16, 900.0), _row("m", 8, 1000.0), _row("lonely", 8, 5.0)]
    points = scaling_series(rows, lambda r: str(r["model_id"]), "tokens_per_s_per_device")
    assert [(p.row["n_devices"], p.throughput, p.ideal, p.base_devices) for p in points] == [
        (8, 8000.0, 8000.0, 8), (16, 14400.0, 16000.0, 8)]
    assert [p.efficiency for p in points] == pytest.approx([1.0, 0.9])


def test_normalising_per_watt_without_a_tdp_says_why() -> None:
    basis = Basis("watt", "tokens/s/device", is_tflops=False)
    out = normalised({"value": 100.0}, {"id": "a"}, basis, {})
    assert out.value is None and out.why.startswith("no TDP in the catalog")
    per_package = normalised({"value": 100.0}, {"devices_per_package": 2}, Basis("device", "tokens/s/device", False, True), {})
    assert (per_package.value, per_package.unit) == (200.0, "tokens/s/package")
    assert vs_measured(0.5, 1000.0, 800.0) == pytest.approx(0.625) and vs_measured(None, 1000.0, 800.0) is None
