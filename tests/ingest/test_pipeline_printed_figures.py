"""Figures the log printed itself sit beside the recomputed ones, with the difference and the convention."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ingest.pipeline import preview

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "fixtures" / "logs" / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_the_json_carries_the_printed_tflops_the_difference_and_the_convention_that_reproduces_it() -> None:
    out = preview(LOG.read_bytes(), LOG.name).as_json()
    reported, ours = out["reported"], out["steady_state"]["model_tflops_per_device"]
    assert reported["reported_tflops_per_device"] == pytest.approx(336.7)
    assert reported["diff_tflops_per_device"] == pytest.approx((ours - 336.7) / 336.7)
    assert reported["explained_by_formula"] == "causal"  # Megatron halves causal attention since 2025-03
    assert abs(reported["conventions"]["causal"] / 336.7 - 1) < 0.02
    assert set(reported["conventions"]) >= {"default", "causal", "embeddings"}


def test_the_text_output_prints_the_log_figure_beside_ours(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "ingest", str(LOG), "--db", f"duckdb:///{tmp_path / 's.duckdb'}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "printed by the log: TFLOP/s/device 336.7 (recomputed differs by +5.8%)" in out.stdout
    assert "the log counts FLOPs as 'causal-halved attention" in out.stdout
