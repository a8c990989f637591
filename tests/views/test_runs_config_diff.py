"""The config diff of overlaid runs lists the keys that differ first: of some forty keys, the two that moved were
hidden among the equal ones in alphabetical order, below the table's first screen."""

from __future__ import annotations

from sqlalchemy import Engine

from ingest import pipeline
from perfledger.views.run_diff import config_diff
from tests.conftest import LOGS

TOKEN_DROPPING = LOGS / "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log"
BASELINE = LOGS / "msft_megatron_ds_gpt3_125m_random_ltd_baseline_8gpu_ansi.log"


def test_the_keys_that_differ_between_runs_come_first_each_group_in_key_order(store_engine: Engine) -> None:
    one = pipeline.ingest_bytes(store_engine, TOKEN_DROPPING.read_bytes(), TOKEN_DROPPING.name)
    two = pipeline.ingest_bytes(store_engine, BASELINE.read_bytes(), BASELINE.name)
    assert one.run_id is not None and two.run_id is not None
    diff = config_diff(store_engine, one.run_id, two.run_id)
    flags = diff["differs"].to_list()
    moved = sum(flags)
    assert 0 < moved < len(flags)
    assert flags == [True] * moved + [False] * (len(flags) - moved)
    assert "config.framework_version" in diff["key"].head(moved).to_list()
    for group in (diff.head(moved), diff.tail(len(flags) - moved)):
        assert group["key"].to_list() == sorted(group["key"].to_list())


def test_the_diff_prints_a_summary_figure_to_six_significant_digits(store_engine: Engine) -> None:
    one = pipeline.ingest_bytes(store_engine, TOKEN_DROPPING.read_bytes(), TOKEN_DROPPING.name)
    two = pipeline.ingest_bytes(store_engine, BASELINE.read_bytes(), BASELINE.name)
    assert one.run_id is not None and two.run_id is not None
    diff = config_diff(store_engine, one.run_id, two.run_id)
    jitter = diff.filter(diff["key"] == "summary.jitter_cv").row(0, named=True)
    for column in (f"run {one.run_id}", f"run {two.run_id}"):
        text = jitter[column]
        assert float(text) == float(f"{float(text):.6g}") and len(text) <= 10, text
