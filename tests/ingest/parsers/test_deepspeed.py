"""Megatron-DeepSpeed logs: tokens per step from the printed consumed-tokens counter."""

from __future__ import annotations

from ingest.detect import parse_file
from tests.ingest.parsers.helpers import LOGS


def test_tokens_come_from_consumed_tokens_deltas_when_printed() -> None:
    _, steps = parse_file(LOGS / "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log")
    assert steps["tokens"].to_list()[1:] == [256 * 2048] * (steps.height - 1)
