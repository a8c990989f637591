"""Every kind of stored item has a run page that renders: fixture logs of every format (tests.conftest.per_format),
the MLPerf results, the micro-benchmark sample, ingested into one store and opened on the Runs page."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import store
from perfledger.records import RunConfig
from tests.conftest import per_format

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
NAMED = ("nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt", "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log",
         "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log", "gcp_a4_b200_qwen3_30b_16gpu_nemo2504.log",
         "cscs_gh200_gated_attn_te_1gpu_rankprefix.out", "oraby8_tts_grpo_wandb_history.csv",
         "cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0")  # read below
ITEMS = [LOGS / name for name in sorted({*per_format(p.name for p in LOGS.iterdir()
                                                     if not p.name.endswith((".expected.json", ".md"))), *NAMED})] + [
    ROOT / "tests" / "fixtures" / "microbench_sample.jsonl"]


@pytest.fixture(scope="module")
def every_item(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A copy of the seeded store with every item ingested; file name -> run id."""
    path = tmp_path_factory.mktemp("every-item") / "perfledger.duckdb"
    shutil.copy(seeded_db, path)
    engine = store.engine_from_url(f"duckdb:///{path}")
    ids = {}
    for item in ITEMS:
        with pipeline.prepare(item.read_bytes(), item.name, RunConfig(), engine=engine, limit=10**9) as prepared:
            ids[item.name] = store.save_run(engine, prepared).run_id
    engine.dispose()
    return path, ids


@pytest.fixture()
def item_url(every_item: tuple[Path, dict[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    shutil.copy(every_item[0], tmp_path / "perfledger.duckdb")
    monkeypatch.setenv("PERFLEDGER_DB_URL", f"duckdb:///{tmp_path / 'perfledger.duckdb'}")
    return every_item[1]


def _texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [i.value for i in at.info] + [c.value for c in at.caption])


@pytest.mark.parametrize("name", [p.name for p in ITEMS])
def test_the_run_page_of_every_stored_item_renders_without_an_exception(
        name: str, item_url: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={item_url[name]}")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    shown = [s.value.replace("\\", "") for s in [*at.subheader, *at.info]]
    assert f"Run {item_url[name]} · {name}" in shown or any(f"Item {item_url[name]} ({name}) is an import" in s
                                                            for s in shown)


def test_an_mlperf_result_shows_time_to_train_first_and_labels_derived_figures(
        item_url: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    """Storing an MLPerf log opened a run page with `InvalidInput: the run has no steps`."""
    at = open_page("runs", f"run={item_url['nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt']}")
    assert not at.exception
    figures = at.dataframe[0].value
    assert figures["figure"][0] == "time to train"
    assert "derived" in figures["evidence"].to_list()
    assert at.metric[0].label.startswith("Time to train") and at.metric[0].value.endswith(" min")


def test_a_run_page_shows_the_configuration_header(item_url: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={item_url['gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log']}")
    header = next(m.value for m in at.markdown if m.value.startswith("| model")).replace("\\", "")
    assert "| b200 |" in header and "| 8 |" in header and "TP 1 · PP 1 · DP 8 · CP 1" in header
    assert "128\u00a0/\u00a02" in header and "fp8" in header and "8,192" in header  # kept on one line


def test_two_runs_overlaid_draw_on_shared_axes_with_a_config_diff(
        item_url: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    a, b = item_url["gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"], item_url["gcp_a4_b200_qwen3_30b_16gpu_nemo2504.log"]
    at = open_page("runs", f"run={a}&vs={b}&x=tokens")
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["vs"] == str(b) and at.query_params["x"] == "tokens"
    assert any(f"Run {a} overlaid with run {b}" in m.value for m in at.markdown)
    diffs = [d.value for d in at.dataframe if "differs" in d.value.columns]  # wherever the page puts it
    assert len(diffs) == 1 and {f"run {a}", f"run {b}", "differs"} <= set(diffs[0].columns)


@pytest.mark.parametrize(("name", "source"), [
    ("cscs_gh200_gated_attn_te_1gpu_rankprefix.out", "step time: logged per step"),
    ("oraby8_tts_grpo_wandb_history.csv", "step time: wall clock from the run time the records carry"),
    ("cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0",
     "step time: logged per step"),
])
def test_the_run_page_says_where_the_step_time_came_from(name: str, source: str, item_url: dict[str, int],
                                                          open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", {"run": str(item_url[name])})
    assert not at.exception
    assert source in _texts(at)


def test_a_run_that_does_not_exist_is_said_and_the_runs_are_listed(seeded_url: str,
                                                                   open_page: Callable[..., AppTest]) -> None:
    """/runs?run=999 had said "the Runs page lists the ingested runs" and listed none."""
    engine = store.engine_from_url(seeded_url)
    pipeline.ingest_path(engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    engine.dispose()
    at = open_page("runs", "run=999")
    assert not at.exception and not at.error, (at.exception, at.error)
    assert any("There is no run 999" in i.value.replace("\\", "") for i in at.info), [i.value for i in at.info]
    assert at.dataframe and "file_name" in at.dataframe[0].value.columns  # the run list, below
