"""Suggested catalog ids for an unknown model name weigh the parameter count the name prints, not spelling alone."""

from __future__ import annotations

import pytest

from perfledger.catalog import nearest_ids
from perfledger.catalog.names import printed_size


@pytest.mark.parametrize(("name", "size"), [("16B", 16e9), ("1024B model", 1.024e12), ("32B model", 32e9),
                                            ("Mixtral 8x7B", 56e9), ("gpt3-126m", 126e6), ("1T", 1e12),
                                            ("Qwen3-235B-A22B", 235e9), ("NVIDIA H100 80GB", None), ("v5p-4096", None)])
def test_the_parameter_count_printed_in_a_name_is_read(name: str, size: float | None) -> None:
    assert printed_size(name) == size


def test_a_trillion_parameter_name_is_not_near_a_hundred_million_parameter_model() -> None:
    near = nearest_ids("model", "1024B model")
    assert "gpt3-126m" not in near
    assert set(near) & {"kimi-k2", "megatron-gpt-1t"}


def test_a_bare_size_suggests_models_of_that_size() -> None:
    assert nearest_ids("model", "16B")[0] == "mcore-gpt-16b" and "mpt-1b" not in nearest_ids("model", "16B")
    assert set(nearest_ids("model", "32B model")) <= {"qwen3-32b", "qwen2.5-32b", "mcore-gpt-32b", "llama1-33b"}


def test_a_family_and_a_size_together_find_that_family_member() -> None:
    assert nearest_ids("model", "Qwen3 235B")[0] == "qwen3-235b-a22b"
    assert nearest_ids("model", "Llama 2 7B chat")[0] == "llama2-7b"
    assert nearest_ids("model", "70b")[0] == "mpt-70b"  # alike in size: the closest spelling wins


def test_names_without_a_size_and_accelerators_are_still_matched_by_spelling() -> None:
    assert nearest_ids("accelerator", "H100 SXM5 80GB")[0].startswith("h100")
    assert len(nearest_ids("model", "Llama")) == 3


def test_an_id_the_whole_name_nearly_spells_still_comes_first() -> None:
    assert nearest_ids("model", "llama2-7b-hf")[0] == "llama2-7b"
    assert nearest_ids("model", "mpt-70")[0] == "mpt-70b"
