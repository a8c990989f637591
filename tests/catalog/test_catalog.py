"""Canonical ids: aliases, nvidia-smi names, defaults with notes, unknown names, precision.

Ids and aliases come from the bundled data/ CSVs (read here with the csv module, apart from the code under test);
no store is opened.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfledger.catalog import (
    bundled_catalog,
    normalize_precision,
    parse_aliases,
    resolve_accelerator,
    resolve_accelerator_noted,
    resolve_model,
)
from perfledger.errors import UnknownId
from perfledger.vocabulary import Precision

DATA = Path(__file__).resolve().parents[2] / "data"
# DESIGN.md's canonical ids: tests and links use them, so they must always resolve to themselves.
DESIGN_ACCELERATORS = ("a100-40gb", "a100-80gb", "a800-80gb", "h100-sxm", "h800", "h200", "b200", "gb200", "mi250",
                       "mi250x", "mi300x", "gaudi2", "gaudi3", "cs-2", "sn30", "bow-ipu", "tpu-v4", "tpu-v5e", "tpu-v5p")
DESIGN_MODELS = ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
                 "gpt3-5b", "gpt3-20b", "gpt2-xl", "mixtral-8x7b")


def _csv_rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _aliases(name: str, *, noted: bool) -> dict[str, str]:
    return {a.name: row["id"] for row in _csv_rows(name) for a in parse_aliases(row["aliases"])
            if (a.note is not None) == noted}


ACCELERATOR_IDS = tuple(r["id"] for r in _csv_rows("accelerators.csv"))
MODEL_IDS = tuple(r["id"] for r in _csv_rows("models.csv"))
ACCELERATOR_ALIASES = _aliases("accelerators.csv", noted=False)
ACCELERATOR_DEFAULTS = _aliases("accelerators.csv", noted=True)
MODEL_ALIASES = _aliases("models.csv", noted=False)

EXPECTED_ACCELERATORS = {
    "A100 80GB": "a100-80gb",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "H100-SXM5-80GB": "h100-sxm",
    "NVIDIA H100-SXM5-80GB": "h100-sxm",
    "H200-SXM5-141GB": "h200",
    "NVIDIA H200-SXM5-141GB": "h200",
    "DGX-H100": "h100-sxm",
    "NVIDIA DGX-H100": "h100-sxm",
    "NVIDIA H100 (Eos)": "h100-sxm",
    "DGX-GB200": "gb200",
    "DGX-GB300": "gb300",
    "DGX-B300": "b300",
    "MI250X": "mi250x",
    "AMD Instinct MI250": "mi250",
    "AMD Instinct MI300X 192GB": "mi300x",
    "MI355X": "mi355x",
    "Gaudi 2": "gaudi2",
    "HPU": "gaudi2",
    "Cerebras CS-2": "cs-2",
    "SambaNova SN30": "sn30",
    "Graphcore Bow IPU": "bow-ipu",
    "TPU v5p": "tpu-v5p",
    "Tesla V100-SXM2-32GB": "v100-32gb",
    "  nvidia a100 sxm4 80gb ": "a100-80gb",
}

EXPECTED_MODELS = {
    "Llama 2 70B": "llama2-70b",
    "LLAMA2-70B": "llama2-70b",
    "meta-llama/Llama-2-70b-hf": "llama2-70b",
    "llama2_70b_lora": "llama2-70b",
    "GPT-3 175B (MLPerf benchmark)": "gpt3-175b",
    "gpt3": "gpt3-175b",
    "LLAMA3.1_405B": "llama3-405b",
    "llama31_8b": "llama3-8b",
    "Llama 3.1 8B": "llama3-8b",
    "GPT-20B": "gpt3-20b",
    "GPT-2B": "gpt3-2b",
    "GPT-2 XL": "gpt2-xl",
    "Mixtral-8x7B": "mixtral-8x7b",
    "Qwen3_235B_a22B (tokendrop)": "qwen3-235b-a22b",
    "DeepSeekV3 (w/o MTP)": "deepseek-v3",
}


@pytest.mark.parametrize(("alias", "expected"), sorted(ACCELERATOR_ALIASES.items()))
def test_every_accelerator_alias_resolves_to_its_id(alias: str, expected: str) -> None:
    assert resolve_accelerator(alias) == expected


@pytest.mark.parametrize(("alias", "expected"), sorted(MODEL_ALIASES.items()))
def test_every_model_alias_resolves_to_its_id(alias: str, expected: str) -> None:
    assert resolve_model(alias) == expected


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED_ACCELERATORS.items()))
def test_printed_and_nvidia_smi_accelerator_names_resolve(name: str, expected: str) -> None:
    assert resolve_accelerator(name) == expected


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED_MODELS.items()))
def test_printed_model_names_resolve(name: str, expected: str) -> None:
    assert resolve_model(name) == expected


def test_alias_targets_are_canonical_ids() -> None:
    assert set(ACCELERATOR_ALIASES.values()) <= set(ACCELERATOR_IDS)
    assert set(ACCELERATOR_DEFAULTS.values()) <= set(ACCELERATOR_IDS)
    assert set(MODEL_ALIASES.values()) <= set(MODEL_IDS)


def test_plain_a100_defaults_to_80gb_with_a_note() -> None:
    acc_id, note = resolve_accelerator_noted("A100")
    assert acc_id == "a100-80gb"
    assert note is not None and "memory size not stated" in note


def test_explicit_variant_resolves_without_a_note() -> None:
    assert resolve_accelerator_noted("NVIDIA A100-SXM4-40GB") == ("a100-40gb", None)


def test_unknown_accelerator_raises_with_three_nearest_ids() -> None:
    with pytest.raises(UnknownId) as info:
        resolve_accelerator("H1000 Turbo")
    assert info.value.kind == "accelerator"
    assert len(info.value.nearest) == 3
    assert set(info.value.nearest) <= set(ACCELERATOR_IDS)
    assert "nearest" in str(info.value)


def test_unknown_model_raises_with_the_nearest_ids_of_its_family_generation_and_size() -> None:
    with pytest.raises(UnknownId) as info:
        resolve_model("Llama 3 8B Distilled")
    assert info.value.kind == "model" and info.value.nearest == ("llama3-8b",)
    with pytest.raises(UnknownId) as none_near:
        resolve_model("Llama 9 9000B")  # no Llama 9 and nothing of 9000B: no suggestion rather than a wrong one
    assert none_near.value.nearest == () and str(none_near.value) == "unknown model 'Llama 9 9000B'"


@given(st.sampled_from(sorted({**ACCELERATOR_ALIASES, **dict.fromkeys(ACCELERATOR_IDS, "")})))
def test_accelerator_resolution_is_idempotent(name: str) -> None:
    once = resolve_accelerator(name)
    assert resolve_accelerator(once) == once


@given(st.sampled_from(sorted({**MODEL_ALIASES, **dict.fromkeys(MODEL_IDS, "")})))
def test_model_resolution_is_idempotent(name: str) -> None:
    once = resolve_model(name)
    assert resolve_model(once) == once


def test_the_bundled_catalog_holds_the_data_files_ids() -> None:
    catalog = bundled_catalog()
    assert catalog.accelerator_names.ids == ACCELERATOR_IDS
    assert catalog.model_names.ids == MODEL_IDS


@pytest.mark.parametrize("canonical", sorted({*DESIGN_ACCELERATORS, *ACCELERATOR_IDS}))
def test_canonical_accelerator_id_resolves_to_itself(canonical: str) -> None:
    assert resolve_accelerator_noted(canonical) == (canonical, None)


@pytest.mark.parametrize("canonical", sorted({*DESIGN_MODELS, *MODEL_IDS}))
def test_canonical_model_id_resolves_to_itself(canonical: str) -> None:
    assert resolve_model(canonical) == canonical


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("BF16", Precision.BF16),
        ("FP8", Precision.FP8),
        ("FP8-CS", Precision.FP8),
        ("MXFP8", Precision.FP8),
        ("FP8 (per-tensor, current scaling)", Precision.FP8),
        ("NVFP4", Precision.FP4),
        ("FP16", Precision.FP16),
        ("half precision (mixed)", Precision.FP16),
        ("None (bfloat16)", Precision.BF16),
        ("", Precision.UNSTATED),
        ("unstated", Precision.UNSTATED),
        ("not stated in table (FP8 family implied by footnote)", Precision.UNSTATED),
        (None, Precision.UNSTATED),
    ],
)
def test_precision_normalizes_to_vocabulary(printed: str | None, expected: Precision) -> None:
    assert normalize_precision(printed) == expected.value
