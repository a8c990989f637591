"""A step time printed with its unit glued on (build-nanogpt's `dt: 332.18ms`) is read in that unit, whatever unit
the key's row says; the same log respelled in seconds reads the same steady step time."""

from __future__ import annotations

import pytest

from ingest.pipeline import preview

# the form build-nanogpt's train_gpt2.py prints each step (karpathy/build-nanogpt, MIT):
# print(f"step {step:5d} | loss: {loss:.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt:.2f}ms | tok/sec: {tps:.2f}")
DT_MS = [10384.06, 332.18, 331.98, 332.40, 332.07, 331.77, 332.55, 331.91, 332.22, 332.02, 332.12, 331.95]


def log(spell: str) -> bytes:
    lines = ["using device: cuda", "total desired batch size: 524288",
             "=> calculated gradient accumulation steps: 4"]
    lines += [f"step {i:5d} | loss: {10.9 - i / 10:.6f} | lr {6e-4 * (i + 1) / 715:.4e} | norm: {15.4 / (i + 1):.4f}"
              f" | dt: {spell.format(ms=ms, s=ms / 1000)} | tok/sec: {524288 / (ms / 1000):.2f}"
              for i, ms in enumerate(DT_MS)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("spell", ["{ms:.2f}ms", "{s:.5f}s", "{s:.5f}sec"])
def test_a_step_time_with_its_unit_glued_on_is_read_in_that_unit(spell: str) -> None:
    outcome = preview(log(spell), "train_gpt2.log")
    steady = outcome.summary.steady_state_json()
    assert steady["step_time_s_median"] == pytest.approx(0.33207, rel=1e-3)
