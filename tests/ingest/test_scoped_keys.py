"""Key spellings are matched in scope: a file's own framework's rows over the generic ones, the user's rows over the
bundled ones, and a key two frameworks log with different meanings read with its own framework's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingest.pipeline import preview
from perfledger.metric_keys import KeyRow, Vocabulary, add_rows, load_vocabulary
from perfledger.settings import DEFAULT_DATA_DIR
from tests.conftest import LOGS

AUTOMODEL = LOGS / "nemo_automodel_llama3_1_8b_hellaswag_pp_h100.jsonl"


def test_a_total_tokens_per_second_key_is_not_read_with_another_frameworks_per_device_meaning() -> None:
    """NeMo Automodel's `tps` is over all GPUs (4 x `tps_per_gpu`); torchtitan's `tps` is per device. Read first-row-
    wins, the total was stored as a measured per-device figure, 4x too high."""
    outcome = preview(AUTOMODEL.read_bytes(), AUTOMODEL.name)
    steady = outcome.summary.steady_state_json()
    assert outcome.summary.config["framework"] == "nemo-automodel"
    assert steady["tokens_per_s_per_device"] == pytest.approx(4703.6, rel=0.01)  # not 18,814
    assert outcome.summary.reported["reported_tokens_per_s_per_device"] == pytest.approx(4703.6, rel=1e-3)
    assert outcome.summary.config["n_devices"] == 4


def test_a_frameworks_row_applies_only_to_files_of_that_framework() -> None:
    vocabulary = load_vocabulary()
    titan = vocabulary.mapping(["tps", "loss", "step", "grad_norm", "throughput(tps)"])
    automodel = vocabulary.mapping(["tps", "tps_per_gpu", "num_label_tokens", "loss", "step"])
    unknown = vocabulary.mapping(["tps", "loss", "step"])
    assert titan.keys_of("reported_tokens_per_s_per_device")[0][0] in ("tps", "throughput(tps)")
    assert [n for n, _ in automodel.keys_of("tokens_per_s")] == ["tps"]
    assert "tps" not in {n for keys in unknown.by_column.values() for n, _ in keys}  # no framework: no meaning


def test_the_users_row_wins_over_the_bundled_row_of_the_same_spelling(tmp_path: Path) -> None:
    shutil.copy(DEFAULT_DATA_DIR / "metric_keys.csv", tmp_path / "metric_keys.csv")
    bundled = load_vocabulary(tmp_path).mapping(["step", "time", "iter"], ("nanogpt",))
    assert bundled.keys_of("step_time_s")[0][1].unit == "ms"
    add_rows([KeyRow(framework="nanogpt", key="time", column="step_time_s", unit="s")], tmp_path)
    mine = load_vocabulary(tmp_path)
    assert [r.origin for r in mine.rows if r.key == "time" and r.framework == "nanogpt"] == ["", "user"]
    assert mine.mapping(["step", "time", "iter"], ("nanogpt",)).keys_of("step_time_s")[0][1].unit == "s"


def test_rows_written_before_the_origin_column_still_read() -> None:
    text = ("framework,key,column,unit,requires,identifies,note\n"
            "*,objective,loss,,,,\n")
    from perfledger.metric_keys import parse_rows

    (row,) = parse_rows(text, "old.csv")
    assert (row.key, row.column, row.origin) == ("objective", "loss", "")
    assert isinstance(Vocabulary((row,)).mapping(["objective"]).by_column["loss"], tuple)


def test_a_frameworks_own_configuration_key_shadows_the_generic_meaning_of_that_key() -> None:
    """NeMo 2 prints Lightning's `accumulate_grad_batches: 1` while Megatron accumulates global batch / (micro batch x
    DP) = 128 / (2 x 8) = 8 micro-steps; read with Lightning's meaning the run was stored with 1 and its verdict
    listed "gradient accumulation 1 vs 8" against NVIDIA's own recipe."""
    log = LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
    assert b"accumulate_grad_batches: 1" in log.read_bytes()
    config = preview(log.read_bytes(), log.name).summary.config
    assert config["framework"] == "nemo"
    assert (config["global_batch"], config["micro_batch"], config["dp"], config["grad_accum"]) == (128, 2, 8, 8)
