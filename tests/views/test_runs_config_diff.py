"""The config diff of overlaid runs lists the keys that differ first: of some forty keys, the two that moved were
hidden among the equal ones in alphabetical order, below the table's first screen."""

from __future__ import annotations

from sqlalchemy import Engine

from ingest import pipeline
from perfledger.views.run_diff import config_diff
from tests.conftest import LOGS

TOKEN_DROPPING = LOGS / "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log"
BASELINE = LOGS / "msft_megatron_ds_gpt3_125m_random_ltd_baseline_8gpu_ansi.log"
MLPERF = LOGS / "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt"


def test_the_keys_that_differ_between_runs_come_first_each_group_in_key_order(store_engine: Engine) -> None:
    one = pipeline.ingest_bytes(store_engine, TOKEN_DROPPING.read_bytes(), TOKEN_DROPPING.name)
    two = pipeline.ingest_bytes(store_engine, BASELINE.read_bytes(), BASELINE.name)
    assert one.run_id is not None and two.run_id is not None
    diff = config_diff(store_engine, one.run_id, two.run_id)
    flags = diff["differs"].to_list()
    moved = sum(flags)
    assert 0 < moved < len(flags)
    assert flags == [True] * moved + [False] * (len(flags) - moved)
    assert "configuration · framework version" in diff["key"].head(moved).to_list()
    for group in (diff.head(moved), diff.tail(len(flags) - moved)):
        assert group["key"].to_list() == sorted(group["key"].to_list())


def test_the_diff_prints_a_summary_figure_to_six_significant_digits(store_engine: Engine) -> None:
    one = pipeline.ingest_bytes(store_engine, TOKEN_DROPPING.read_bytes(), TOKEN_DROPPING.name)
    two = pipeline.ingest_bytes(store_engine, BASELINE.read_bytes(), BASELINE.name)
    assert one.run_id is not None and two.run_id is not None
    diff = config_diff(store_engine, one.run_id, two.run_id)
    jitter = diff.filter(diff["key"] == "steady state · jitter (CV)").row(0, named=True)
    for column in (f"run {one.run_id}", f"run {two.run_id}"):
        text = jitter[column]
        assert float(text) == float(f"{float(text):.6g}") and len(text) <= 10, text


def test_the_diff_names_every_setting_and_spells_out_what_a_file_states(seeded_store: Engine) -> None:
    """`config.format_meta` with a JSON object, `summary.tokens_per_s_per_device` and MFU as a fraction were on
    screen: every key now reads as a reader names it, a nested block one row per entry, a share in %."""
    one = pipeline.ingest_path(seeded_store, MLPERF).run_id
    two = pipeline.ingest_path(seeded_store, LOGS / "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log").run_id
    assert one is not None and two is not None
    diff = config_diff(seeded_store, one, two)
    keys = diff["key"].to_list()
    assert "configuration · what the file states · submission org" in keys
    assert not [k for k in keys if "_" in k or "format_meta" in k], [k for k in keys if "_" in k]
    cells = [v for c in diff.columns[1:-1] for v in diff[c].drop_nulls().to_list()]
    assert not [c for c in cells if c.startswith("{")], "a JSON object on screen"
    shares = [v for r in diff.filter(diff["key"].str.ends_with("(%)")).iter_rows(named=True)
              for k, v in r.items() if k.startswith("run ") and v and v[0].isdigit()]
    assert shares and all(v.endswith("%") for v in shares), shares
