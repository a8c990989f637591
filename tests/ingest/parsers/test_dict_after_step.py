"""A printed dict after a step on the same line (`Step 10: {'loss': 2.28, 'step_time': 0.51}`) is the record of
that step: its step is the one printed, not its place among the records."""

from __future__ import annotations

from ingest.parsers._console import line_pairs
from ingest.pipeline import preview


def test_the_step_printed_before_a_dict_is_the_dicts_step() -> None:
    assert line_pairs("Step 10: {'loss': '2.28', 'step_time': 0.51}") == {
        "loss": "2.28", "step_time": "0.51", "Step": "10"}


def test_a_log_of_dicts_after_their_steps_numbers_its_records_by_them() -> None:
    text = "".join(f"Step {5 * i}: {{'loss': {2.3 - i / 50:.3f}, 'learning_rate': 1e-05, 'step_time': 0.51}}\n"
                   for i in range(1, 13))
    outcome = preview(text.encode(), "train.log")
    steady = outcome.summary.steady_state_json()
    assert steady["last_step"] == 60
    assert not any("print no step" in w for w in outcome.summary.warnings)
