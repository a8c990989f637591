"""A run's workload is the vocabulary's, whoever printed it: a LoRA run is set beside the published LoRA figures of
its setup (runs were stored as `lora` while published rows were `lora_finetune`, so a LoRA run met none), a run an
earlier release stored as `lora` reads the same, and a trainer's class name states the workload of its log."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine

from ingest import pipeline
from perfledger import schema, store, views
from tests.conftest import LOGS

LORA_RESULT = LOGS / "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt"
HELD_OUT, UNSEEN = (Path(__file__).resolve().parents[1] / "fixtures" / kind for kind in ("heldout", "unseen"))
HALOS = HELD_OUT / "halos_sft_llama2_7b_fsdp_3gpu.txt"
CLAIMS_HEADER = ("metric,value,unit,source_id,source_title,source_url,source_date,source_kind,model,accelerator,n_devices,"
                 "precision,workload")


def _published_lora_claim(engine: Engine, tmp_path: Path, workload: str) -> None:
    table = tmp_path / "lora_claims.csv"
    table.write_text(f"{CLAIMS_HEADER}\ntokens_per_s_per_device,1234.5,tokens/s/device,lora_vendor,A LoRA table,"
                     f"https://example.com/lora,2025-01-01,vendor,Llama 2 70B,NVIDIA H200 SXM 141GB,8,fp8,{workload}\n")
    pipeline.ingest_path(engine, table)


def _published(engine: Engine, run_id: int) -> list[float]:
    claims = views.nearest_claims(engine, run_id)
    return claims.filter(claims["figure from"] == "published")["value"].to_list()


def test_a_lora_run_is_set_beside_the_published_lora_figures_of_its_setup(writable_engine: Engine,
                                                                          tmp_path: Path) -> None:
    run_id = pipeline.ingest_path(writable_engine, LORA_RESULT).run_id
    for printed in ("LoRA", "lora_finetune", "PEFT (LoRA)"):
        _published_lora_claim(writable_engine, tmp_path, printed)
    run = store.run(writable_engine, run_id)
    assert run is not None and run.config["workload"] == "lora_finetune"
    assert _published(writable_engine, run_id) == [1234.5]  # one row, however its table spelled the workload


def test_a_run_an_earlier_release_stored_as_lora_reads_as_the_vocabularys_lora(writable_engine: Engine,
                                                                               tmp_path: Path) -> None:
    run_id = pipeline.ingest_path(writable_engine, LORA_RESULT).run_id
    _published_lora_claim(writable_engine, tmp_path, "LoRA")
    with writable_engine.begin() as conn:
        config = conn.execute(sa.select(schema.run.c.config).where(schema.run.c.id == run_id)).scalar_one()
        assert '"workload": "lora_finetune"' in config
        conn.execute(sa.update(schema.run).where(schema.run.c.id == run_id)
                     .values(config=config.replace('"lora_finetune"', '"lora"')))
    run = store.run(writable_engine, run_id)
    assert run is not None and run.config["workload"] == "lora_finetune"
    assert _published(writable_engine, run_id) == [1234.5]


def test_a_trainers_class_name_states_the_workload_however_it_is_spelled(writable_engine: Engine,
                                                                         tmp_path: Path) -> None:
    """HALOs printed `trainer: SFTTrainer` and, under `loss:`, `name: sft`; the run was stored as pretraining by
    default. Without the loss name, the trainer's class says it alone, however the class is spelled."""
    raw = HALOS.read_bytes()
    for spelled in (b"SFTTrainer", b"SftTrainer", b"sft_trainer"):
        path = tmp_path / spelled.decode() / HALOS.name
        path.parent.mkdir()
        path.write_bytes(raw.replace(b"trainer: SFTTrainer", b"trainer: " + spelled).replace(b"  name: sft\n", b""))
        run = store.run(writable_engine, pipeline.ingest_path(writable_engine, path).run_id)
        assert run is not None
        assert run.config["workload"] == "sft", spelled
        assert run.config["identity"]["workload"] == {"from": "log", "where": f"line 27: trainer: {spelled.decode()}"}
    published = store.run(writable_engine, pipeline.ingest_path(writable_engine, HALOS).run_id)
    assert published is not None and published.config["workload"] == "sft"
    assert published.config["identity"]["workload"]["from"] == "log"


@pytest.mark.parametrize(("name", "workload", "where"), [
    ("trl_dpo_gemma2b_lora_train.log", "lora_finetune", "trainable params: 19,611,648 || all params"),
    ("trl_sft_llama2_7b_hhrlhf_train_log.txt", "sft", "trl/trainer/sft_trainer.py"),
    ("halos_sft_llama2_7b_fsdp_3gpu.txt", "sft", "trainer: SFTTrainer"),
])
def test_what_a_fine_tuning_log_prints_states_its_workload(name: str, workload: str, where: str) -> None:
    """PEFT's count of trainable parameters, a warning from TRL's trainer module, a trainer class: each was left
    unread and the run stored as pretraining by default."""
    with pipeline.prepare((HELD_OUT / name).read_bytes(), name) as prepared:
        assert prepared.config["workload"] == workload
        assert prepared.config["identity"]["workload"]["from"] == "log"
        assert where in prepared.config["identity"]["workload"]["where"]


def test_llama_factorys_fine_tuning_method_states_lora() -> None:
    name = "llamafactory_deepseek7b_lora_2gpu_running_log.txt"
    with pipeline.prepare((UNSEEN / name).read_bytes(), name) as prepared:
        assert prepared.config["workload"] == "lora_finetune"
        assert prepared.config["identity"]["workload"]["from"] == "log"
