"""The device count and the model a log states are read in the forms real logs print them: DeepSpeed's config
print (its world size is the data-parallel size), `world size N` lines, accelerate's and Lightning's banners,
JAX's distributed start line; a model in a dataclass dump, a script's `Model:` line or a YAML `name_or_path`,
behind a local directory, an `-Instruct` variant resolved to its base model's shape and said so."""

from __future__ import annotations

import pytest

from ingest.config_lines import ConfigLines
from ingest.identity import Identity, resolve
from ingest.pipeline import preview
from perfledger.catalog.resolve import INSTRUCT_VARIANT, model_in_name
from perfledger.frameworks import load_frameworks
from perfledger.records import RunConfig
from tests.conftest import LOGS


def identity_of(text: str) -> Identity:
    frameworks = load_frameworks()
    lines = ConfigLines(frameworks)
    lines.feed(lines.prepare(text, 1))
    return resolve(RunConfig(), lines.statements(), reader="key_value", frameworks=frameworks)


@pytest.mark.parametrize(("line", "devices"), [
    ("2024-05-01 10:00:00 - INFO - __main__ - world size 8", 8),
    ("Distributed world size: 16", 16),
    ("I0501 10:00:00.000000 140 max_utils.py:200] Initialized jax.distributed with 256 devices, 64 processes", 256),
    ("Num processes: 4", 4),
    ("[rank: 0] Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/32", 32),
])
def test_a_device_count_is_read_in_the_forms_logs_print_it(line: str, devices: int) -> None:
    found = identity_of(f"starting\n{line}\ndone\n")
    assert found.config.n_devices == devices
    assert found.provenance["n_devices"]["where"] == f"line 2: {line}"


@pytest.mark.parametrize("line", [
    "    process_group: 0x7a6a189f4570, world size 8",
    "> data parallel world size: 4",
])
def test_a_groups_world_size_is_not_taken_for_the_runs(line: str) -> None:
    assert identity_of(f"{line}\n").config.n_devices is None


def test_deepspeeds_world_size_is_its_data_parallel_size_times_the_model_parallel_sizes() -> None:
    found = identity_of("[2021-05-26 04:38:20,033] [INFO] [config.py:752:print]   world_size ................... 8\n"
                        "  tensor_model_parallel_size: 2\n")
    assert (found.config.dp, found.config.n_devices) == (8, 16)
    assert found.provenance["n_devices"]["where"].startswith("derived: data-parallel size 8 (line 1: ")
    assert "pp, cp not stated: taken as 1" in found.provenance["n_devices"]["where"]


def test_an_hf_deepspeed_logs_devices_come_from_its_deepspeed_config_print() -> None:
    """bigscience's 16-node x 4 V100 run states its device count only in DeepSpeed's config print."""
    outcome = preview((LOGS / "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out").read_bytes(),
                      "bigscience_hf_ds_gpt2_perf_n16_v100_multirank.out")
    assert (outcome.summary.config["n_devices"], outcome.summary.config["global_batch"]) == (64, 2048)
    assert "world_size ................... 64" in outcome.summary.identity["n_devices"]["where"]


@pytest.mark.parametrize(("line", "model", "printed"), [
    (("ModelArguments(model_name_or_path='/mnt/models/Qwen2.5-7B-Instruct', model_revision='main', "
      "torch_dtype='bfloat16', trust_remote_code=False)"), "qwen2.5-7b", "/mnt/models/Qwen2.5-7B-Instruct"),
    ("Model: meta-llama/Llama-3.1-8B-Instruct", "llama3-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("  name_or_path: Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct"),
    ('  "_name_or_path": "/data/ckpt/Meta-Llama-3-8B-Instruct",', "llama3-8b", "/data/ckpt/Meta-Llama-3-8B-Instruct"),
])
def test_an_instruct_model_named_in_a_dump_or_a_model_line_links_to_its_base_shape(line: str, model: str,
                                                                                   printed: str) -> None:
    found = identity_of(f"{line}\n")
    assert (found.config.model, found.config.model_as_printed) == (model, printed)
    assert found.provenance["model"]["confidence"] == INSTRUCT_VARIANT


def test_a_model_line_or_config_path_the_catalog_does_not_know_is_not_stored_as_the_model() -> None:
    found = identity_of('Model: GPT(vocab=50304)\n  "_name_or_path": "C:\\\\Users\\\\me\\\\snapshots\\\\f07323ad",\n')
    assert (found.config.model, found.config.model_as_printed) == (None, None)


@pytest.mark.parametrize(("name", "model"), [
    ("/data/models/Meta-Llama-3-8B-Instruct", "llama3-8b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
    ("/ckpt/run1/step100", None),
])
def test_a_models_name_is_found_behind_the_directories_of_its_path(name: str, model: str | None) -> None:
    found = model_in_name(name)
    assert (found.id if found else None) == model


@pytest.mark.parametrize(("line", "model"), [
    ("wandb: Syncing run qwen2.5-7b-instruct-sft-lr1e-5", "qwen2.5-7b"),
    ("wandb: 🚀 View run llama3_8b_lora_r16 at: https://wandb.ai/team/project/runs/3x9k2", "llama3-8b"),
])
def test_a_run_name_wandb_prints_links_the_model_it_names(line: str, model: str) -> None:
    found = identity_of(f"{line}\n")
    assert found.config.model == model
    assert found.provenance["model"]["where"] == f"line 1: {line}"
