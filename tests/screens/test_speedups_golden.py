"""The published NeMo H200 vs A100 figures, asserted on the table the Speedups page renders."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest


@pytest.fixture()
def speedups_table(seeded_url: str, open_page: Callable[..., AppTest]) -> list[dict[str, object]]:
    at = open_page("speedups")
    assert not at.exception, at.exception
    frame = next(df.value for df in at.dataframe if "speedup (x)" in df.value.columns)
    return [r for r in frame.to_dict("records") if r["kind"] == "computed from two stored results"]


@pytest.mark.parametrize(("model", "speedup", "h200_tflops", "a100_tflops"), [
    ("llama2-7b", 3.7, 779, 211),
    ("llama2-13b", 4.0, 822, 206),
    ("llama2-70b", 4.2, 836, 201),
])
def test_nemo_h200_vs_a100_speedups_and_tflops_match_published(
    speedups_table: list[dict[str, object]], model: str, speedup: float, h200_tflops: int, a100_tflops: int
) -> None:
    row = next(r for r in speedups_table if r["model"] == model)
    assert round(float(row["speedup (x)"]), 1) == speedup  # type: ignore[arg-type]
    assert row["candidate TFLOPS/device published"] == h200_tflops
    assert row["baseline TFLOPS/device published"] == a100_tflops
    assert float(row["candidate TFLOPS/device recomputed"]) == pytest.approx(h200_tflops, rel=0.01)  # type: ignore[arg-type]
    assert float(row["baseline TFLOPS/device recomputed"]) == pytest.approx(a100_tflops, rel=0.01)  # type: ignore[arg-type]


def test_speedups_70b_row_warns_that_device_counts_differ(speedups_table: list[dict[str, object]]) -> None:
    row = next(r for r in speedups_table if r["model"] == "llama2-70b")
    assert "devices differ (32 vs 8)" in str(row["caveats"])
