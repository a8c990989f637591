"""A JSON document whose list of per-step objects carries a step and timing keys nobody listed (`per_step[]` with
`step_time_s`, `tokens_per_s`) is read as steps: the keys are read from their words (a step word, a time noun and
the unit after them; a quantity per second), so the same document respelled stores the same step time."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from tests.ingest.parsers.helpers import stored_step_time

DOCUMENT = Path(__file__).resolve().parents[1] / "fixtures" / "heldout" / "nanochat_mlx_d32_dataset128_steps.json"


def _own_step_time(doc: dict[str, Any]) -> float:
    """By hand: the median of per_step[].step_time_s after dropping the first tenth."""
    times = [s["step_time_s"] for s in doc["per_step"]]
    return statistics.median(times[len(times) // 10:])


def _respelled(doc: dict[str, Any]) -> dict[str, Any]:
    """The same records as another logger spells them: `history[]` of `iteration`, `iter_time_ms` (milliseconds),
    `tokens_per_second`."""
    records = [{"iteration": s["step"], "loss": s["loss"], "iter_time_ms": s["step_time_s"] * 1000.0,
                "tokens_per_second": s["tokens_per_s"]} for s in doc["per_step"]]
    return {k: v for k, v in doc.items() if k != "per_step"} | {"history": records}


def test_a_documents_per_step_list_with_unlisted_timing_keys_stores_its_step_time(writable_engine: Engine) -> None:
    doc = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    ours = stored_step_time(writable_engine, DOCUMENT.read_bytes(), DOCUMENT.name)
    assert ours == pytest.approx(_own_step_time(doc), rel=0.01)


def test_the_document_respelled_stores_the_same_step_time(writable_engine: Engine) -> None:
    doc = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    raw = json.dumps(_respelled(doc), indent=2).encode()
    ours = stored_step_time(writable_engine, raw, "respelled_" + DOCUMENT.name)
    assert ours == pytest.approx(_own_step_time(doc), rel=0.01)
