"""Printed trainer dicts with no step key of their own, numbers quoted as strings, and a sample count for a position
(the DPO / HALOs trainers' `train stats after 128 examples: {'loss/train': '0.69', 'examples_per_second': '52.1',
'counters/examples': 128, 'counters/updates': 4}`) are steps: their keys are read from their words (a loss with its
split, a sample rate, a sample and an update counter), and the step time is the samples of the step over the
printed samples/s, stored, with the samples/s kept as the run's figure."""

from __future__ import annotations

import re
import statistics

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.records import RunRow
from tests.ingest.parsers.helpers import LOGS, stored_step_time

DPO = LOGS / "dpo_trainer_hnet_gpt2_prism_train_stats.out"  # batch_size 32: 32 examples per update
_RATE = re.compile(r"'examples_per_second': '([\d.]+)'")


def _own_samples_per_s(text: str) -> float:
    """The log's own figure, by hand: the median printed examples/s after dropping the first tenth."""
    printed = [float(v) for v in _RATE.findall(text)]
    return statistics.median(printed[len(printed) // 10:])


def _stored(engine: Engine, raw: bytes, name: str) -> RunRow:
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None, outcome
    row = store.run(engine, outcome.run_id)
    assert row is not None and row.summary is not None
    return row


def test_train_stats_dicts_are_steps_timed_by_their_examples_per_second(writable_engine: Engine) -> None:
    text = DPO.read_text(encoding="utf-8")
    own = _own_samples_per_s(text)
    row = _stored(writable_engine, DPO.read_bytes(), DPO.name)
    assert row.n_steps >= 506  # each of the 506 `train stats` lines, numbered by its update counter
    assert row.summary is not None
    assert row.summary["step_time_s_median"] == pytest.approx(32 / own, rel=0.01)
    samples_per_s = store.results(writable_engine, run_id=row.id, metric="samples_per_s")
    assert samples_per_s.height == 1 and samples_per_s["value"][0] == pytest.approx(own, rel=0.01)
    assert any("logged throughput (samples/s)" in w for w in row.warnings)
    # DeepSpeed's config print states train_batch_size 128 (four ranks of 32); the log's counters count 32: said
    assert any("counts 32 samples per step but states a global batch of 128" in w for w in row.warnings)


def _respelled(text: str) -> str:
    """The older DPO trainer's spelling: numbers not quoted, and no update counter (the position is the examples
    count in the line's text only)."""
    text = re.sub(r"'(-?[\d.]+(?:e-?\d+)?)'", r"\1", text)
    return re.sub(r", 'counters/updates': \d+", "", text)


def test_the_train_stats_respelled_without_quotes_or_update_counter_store_the_same_step_time(
        writable_engine: Engine) -> None:
    text = DPO.read_text(encoding="utf-8")
    respelled = _respelled(text)
    assert respelled != text and "'examples_per_second': 52.133" in respelled and "counters/updates" not in respelled
    ours = stored_step_time(writable_engine, respelled.encode(), "respelled_" + DPO.name)
    assert ours == pytest.approx(32 / _own_samples_per_s(text), rel=0.01)
