"""Real held-out logs (tests/fixtures/heldout, with their provenance) store no figure or identity the log does not
state: a progress bar that ran out before training (transformers 5 prints one per tensor loaded, "427/427") is not
the training bar; a tokenizer's name is never the model; a log's own windowed throughput is kept beside ours."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store

HELDOUT = Path(__file__).resolve().parents[1] / "fixtures" / "heldout"
GRPO = HELDOUT / "trl_grpo_qwen35_9b_transformers5_string_metrics.log"
GRPO_OWN_STEP_S = 32.07821229050279  # manifest.csv: the tqdm clock over steps 21-200


def _stored_step_time(engine: Engine, raw: bytes, name: str) -> float:
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None
    stored = store.run(engine, outcome.run_id)
    assert stored is not None and stored.summary is not None
    return float(stored.summary["step_time_s_median"])


def _transformers4_spelling(text: str) -> str:
    """transformers 4 printed `Loading checkpoint shards` and its metrics as numbers, not quoted strings."""
    text = text.replace("Loading weights", "Loading checkpoint shards")
    return re.sub(r"'(-?[\d.]+(?:e-?\d+)?)'", r"\1", text)


def test_a_finished_loading_bar_with_a_larger_total_is_not_the_training_bar(writable_engine: Engine) -> None:
    step_s = _stored_step_time(writable_engine, GRPO.read_bytes(), GRPO.name)
    assert step_s == pytest.approx(GRPO_OWN_STEP_S, rel=0.01)  # was 1/4149.31 it/s: the loading bar's rate


def test_the_grpo_log_respelled_as_transformers_4_stores_the_same_step_time(writable_engine: Engine) -> None:
    text = GRPO.read_text(encoding="utf-8")
    respelled = _transformers4_spelling(text)
    assert respelled != text and "'loss': 0," in respelled
    ours = _stored_step_time(writable_engine, respelled.encode(), "respelled_" + GRPO.name)
    assert ours == pytest.approx(_stored_step_time(writable_engine, GRPO.read_bytes(), GRPO.name), rel=1e-9)
