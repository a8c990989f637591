"""Real held-out logs (tests/fixtures/heldout, with their provenance) store no figure or identity the log does not
state: a progress bar that ran out before training (transformers 5 prints one per tensor loaded, "427/427") is not
the training bar; a tokenizer's name is never the model; a log's own windowed throughput is kept beside ours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.run_figures import printed_vs_recomputed
from tests.ingest.parsers.helpers import stored_step_time

HELDOUT = Path(__file__).resolve().parents[1] / "fixtures" / "heldout"
GRPO = HELDOUT / "trl_grpo_qwen35_9b_transformers5_string_metrics.log"
GRPO_OWN_STEP_S = 32.07821229050279  # manifest.csv: the tqdm clock over steps 21-200


def _transformers4_spelling(text: str) -> str:
    """transformers 4 printed `Loading checkpoint shards` and its metrics as numbers, not quoted strings."""
    text = text.replace("Loading weights", "Loading checkpoint shards")
    return re.sub(r"'(-?[\d.]+(?:e-?\d+)?)'", r"\1", text)


def test_a_finished_loading_bar_with_a_larger_total_is_not_the_training_bar(writable_engine: Engine) -> None:
    step_s = stored_step_time(writable_engine, GRPO.read_bytes(), GRPO.name)
    assert step_s == pytest.approx(GRPO_OWN_STEP_S, rel=0.01)  # was 1/4149.31 it/s: the loading bar's rate


def test_the_grpo_log_respelled_as_transformers_4_stores_the_same_step_time(writable_engine: Engine) -> None:
    text = GRPO.read_text(encoding="utf-8")
    respelled = _transformers4_spelling(text)
    assert respelled != text and "'loss': 0," in respelled
    ours = stored_step_time(writable_engine, respelled.encode(), "respelled_" + GRPO.name)
    assert ours == pytest.approx(stored_step_time(writable_engine, GRPO.read_bytes(), GRPO.name), rel=1e-9)


FOUNDRY = HELDOUT / "llm_foundry_mpt_1b_8gpu_logs.txt"
TOKENIZER_BLOCK = "tokenizer:\n  name: EleutherAI/gpt-neox-20b\n"


def _stored(engine: Engine, raw: bytes, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None
    stored = store.run(engine, outcome.run_id)
    assert stored is not None and stored.summary is not None
    return dict(stored.config), dict(stored.summary)


def test_a_tokenizer_name_is_never_the_model(writable_engine: Engine) -> None:
    config, summary = _stored(writable_engine, FOUNDRY.read_bytes(), FOUNDRY.name)
    assert config["model"] == "mpt-1b" and "gpt-neox" not in str(config["model_as_printed"])
    # with gpt-neox-20b's shape the run was stored at 2,108 TFLOP/s per device; the log prints 151 (speed monitor)
    assert summary["model_tflops_per_device"] == pytest.approx(150.99, rel=0.02)


@pytest.mark.parametrize("spelling", ["tokenizer_name: EleutherAI/gpt-neox-20b\n",
                                      "tokenizer.name: EleutherAI/gpt-neox-20b\n",
                                      "tokenizer:\n    name_or_path: EleutherAI/gpt-neox-20b\n"])
def test_the_tokenizer_respelled_still_never_names_the_model(writable_engine: Engine, spelling: str) -> None:
    text = FOUNDRY.read_text(encoding="utf-8")
    assert TOKENIZER_BLOCK in text
    config, summary = _stored(writable_engine, text.replace(TOKENIZER_BLOCK, spelling).encode(), "r_" + FOUNDRY.name)
    plain_config, plain_summary = _stored(writable_engine, FOUNDRY.read_bytes(), FOUNDRY.name)
    assert config["model"] == plain_config["model"] == "mpt-1b"
    assert summary["model_tflops_per_device"] == pytest.approx(plain_summary["model_tflops_per_device"], rel=1e-9)


def test_two_models_named_are_stored_unlinked_not_resolved_from_the_joined_names(writable_engine: Engine) -> None:
    """llm-foundry's hf_causal_lm configs print the checkpoint the run starts from; here it names another model
    than the run name: the run is kept as printed and asked, with no model's FLOPs."""
    text = FOUNDRY.read_text(encoding="utf-8").replace(
        "  name: mpt_causal_lm\n", "  name: hf_causal_lm\n  pretrained_model_name_or_path: mosaicml/mpt-7b\n")
    config, summary = _stored(writable_engine, text.encode(), "two_models_" + FOUNDRY.name)
    assert config.get("model") is None
    assert "mosaicml/mpt-7b" in config["model_as_printed"] and "mpt-1b-gpus-8" in config["model_as_printed"]
    assert summary.get("model_tflops_per_device") is None


FOUNDRY_OWN_TOKENS_S = 15825.4623  # manifest.csv: median of the printed device tokens/s, batches 14-36


def test_a_speed_monitors_windowed_figure_is_kept_beside_ours_over_the_windows_inside_the_steady_window(
        writable_engine: Engine) -> None:
    """Composer's speed monitor prints means over its last 10 batches (`window_size: 10`, nested in the YAML
    dump); the ones printed before a whole window of steady steps still average warm-up: the log's own figure is
    the median of those printed after it, stored and shown beside the recomputed one, not instead of it."""
    outcome = ingest_bytes(writable_engine, FOUNDRY.read_bytes(), FOUNDRY.name)
    assert outcome.run_id is not None
    config, summary = _stored(writable_engine, FOUNDRY.read_bytes(), FOUNDRY.name)
    assert config["printed_window"] == 10
    reported = summary["reported"]
    assert reported["reported_tokens_per_s_per_device"] == pytest.approx(FOUNDRY_OWN_TOKENS_S, rel=1e-9)
    assert "10-step means" in reported["printed_over"]["tokens_per_s_per_device"]
    shown = printed_vs_recomputed(writable_engine, outcome.run_id).row(0, named=True)
    assert shown["printed"] == pytest.approx(FOUNDRY_OWN_TOKENS_S, rel=1e-9)
    assert shown["recomputed"] == pytest.approx(summary["tokens_per_s_per_device"])
    assert shown["relative_difference"] == pytest.approx(shown["recomputed"] / FOUNDRY_OWN_TOKENS_S - 1)
    assert "10-step means" in shown["printed_over"]
    # the FLOPs convention is read at the log's own tokens/s: the catalog's default reproduces its TFLOP/s
    assert reported["explained_by_formula"] == "default"
