"""A logged key no vocabulary row spells is read from its words (perfledger.key_grammar) only where they settle its
meaning; a row of the vocabulary, bundled or the user's, always comes first."""

from __future__ import annotations

import pytest

from perfledger.key_grammar import row_by_grammar
from perfledger.metric_keys import load_vocabulary


@pytest.mark.parametrize(("key", "column", "unit"), [
    ("examples_per_second", "samples_per_s", "count/s"), ("samples/s", "samples_per_s", "count/s"),
    ("tokens_per_s", "tokens_per_s", "count/s"), ("tokens/s/gpu", "reported_tokens_per_s_per_device", "count/s"),
    ("loss/train", "loss", ""), ("loss/eval", "eval", ""), ("counters/examples", "samples_total", "count"),
    ("after/examples", "samples_total", "count"), ("counters/updates", "step", "count"),
    ("step_time_s", "step_time_s", "s"), ("iter_time_ms", "step_time_s", "ms"), ("stepTimeMs", "step_time_s", "ms")])
def test_a_key_is_read_from_its_words(key: str, column: str, unit: str) -> None:
    row = row_by_grammar(key)
    assert row is not None and (row.column, row.unit) == (column, unit)


@pytest.mark.parametrize("key", ["logps_train/chosen", "eval/samples_per_second", "samples_per_ms", "data_time",
                                 "samples/s/gpu", "tokens_per_step", "num_examples", "after/train", "eval_step_time"])
def test_a_key_whose_words_do_not_settle_a_meaning_is_not_read(key: str) -> None:
    assert row_by_grammar(key) is None


def test_a_vocabulary_row_comes_before_the_grammar() -> None:
    vocabulary = load_vocabulary()
    assert [r.column for r in vocabulary.rows_for("throughput/device/batches_per_second")] == ["step_time_s"]
    assert vocabulary.rows_for("examples_per_second")[0].note.startswith("read by grammar")
    assert vocabulary.mapping(["examples_per_second", "counters/updates"]).by_column.keys() >= {"samples_per_s",
                                                                                                 "step"}
