"""MLPerf results as MLPerf shows them: a result's run page leads with its time to train in minutes, derives model
TFLOPS where the model and sequence length are known and sets it beside the published claims of the same workload;
the MLPerf results page lists every stored result, filtered and sorted from the URL, as its CSV does."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import numbers, store, views
from perfledger.calc.metrics import minutes, model_tflops

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
GPT3 = "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt"  # 512 H100, 3,147.895 s, seq 2048
LORA = "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt"  # 8 H200, 1,411.2 s, sequence length not printed
RESULTS = (GPT3, LORA, "google_tpu_v5p_1024_maxtext_gpt3_v4.0_result_0.txt",
           "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt", "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt")


@pytest.fixture(scope="module")
def mlperf_db(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("mlperf") / "perfledger.duckdb"
    shutil.copy(seeded_db, path)
    engine = store.engine_from_url(f"duckdb:///{path}")
    ids = {name: int(pipeline.ingest_path(engine, LOGS / name).run_id or 0) for name in RESULTS}
    engine.dispose()
    return path, ids


@pytest.fixture()
def run_ids(mlperf_db: tuple[Path, dict[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    shutil.copy(mlperf_db[0], tmp_path / "perfledger.duckdb")
    monkeypatch.setenv("PERFLEDGER_DB_URL", f"duckdb:///{tmp_path / 'perfledger.duckdb'}")
    return mlperf_db[1]


def _engine() -> store.Engine:
    import os

    return store.engine_from_url(os.environ["PERFLEDGER_DB_URL"])


def _gpt3_tflops(engine: store.Engine, run_id: int) -> float:
    row = store.run(engine, run_id)
    assert row is not None and row.summary is not None
    tokens = store.results(engine, run_id=run_id, metric="tokens_per_s_per_device")["value"][0]
    return model_tflops(tokens, row.summary["flops_per_token"])


def test_an_mlperf_run_page_leads_with_time_to_train_in_minutes_and_derived_model_tflops(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[GPT3]}")
    assert not at.exception, at.exception
    head = {m.label: m.value for m in at.metric}
    assert next(iter(head)) == "Time to train (this result file)"  # one result file is a run, not MLPerf's score
    assert head["Time to train (this result file)"] == numbers.text(minutes(3147.895), "min") == "52.4649 min"
    tflops = _gpt3_tflops(_engine(), run_ids[GPT3])
    assert head["Model TFLOP/s per device (derived)"] == numbers.text(tflops)
    assert 700 < tflops < 900


def test_an_mlperf_run_is_set_beside_the_797_tflops_claims_of_its_model_and_accelerator(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[GPT3]}")
    claims = at.dataframe[-1].value
    tflops = claims[claims["metric"] == "model TFLOP/s/device"]  # the metric by its name
    assert tflops["figure from"].iloc[0] == "this run (derived)"
    assert tflops["value"].iloc[0] == pytest.approx(_gpt3_tflops(_engine(), run_ids[GPT3]))
    assert (tflops[tflops["figure from"] == "published"]["value"] == 797).sum() >= 2
    assert set(claims["workload"].dropna()) == {"pretrain"}


def test_a_lora_run_opens_with_its_score_not_a_steady_state_warning(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[LORA]}")
    assert not at.exception, at.exception
    shown = list(at.main)  # every element, in the order drawn
    score = next(i for i, e in enumerate(shown) if type(e).__name__ == "Metric" and e.label.startswith("Time to train"))
    warned = [i for i, e in enumerate(shown) if type(e).__name__ == "Warning" and "Not a steady state" in e.value]
    assert warned and score < warned[0]  # three timed steps are not a steady state: said, after the score
    assert at.metric[0].value == "23.5202 min"  # 1,411.21 s, derived at six significant digits
    assert "no sequence length" in " ".join(c.value for c in at.caption).replace("\\", "")
    assert not [x for x in at.expander if "Figures stored" in x.label]  # the score is not collapsed away
    assert at.dataframe[0].value["figure"].iloc[0] == "time to train"


def test_nearest_claims_of_a_lora_run_are_fine_tuning_claims_only(run_ids: dict[str, int]) -> None:
    claims = views.nearest_claims(_engine(), run_ids[LORA])
    assert set(claims["workload"].drop_nulls().to_list()) <= {"lora_finetune"}
    pretrain = store.results(_engine(), model_ids=["llama2-70b"], accelerator_ids=["h200"], workload="pretrain")
    assert pretrain.height  # there are pretraining claims for llama2-70b on h200, and none is listed
    assert not set(pretrain["id"].to_list()) & set(claims["result id"].drop_nulls().to_list())


def test_the_mlperf_page_lists_every_stored_result_in_minutes_with_its_submission(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("mlperf")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert table.columns.tolist()[:5] == ["benchmark", "time to train (min)", "submitter", "accelerator × count", "run"]
    eos = table[table["file"] == GPT3].iloc[0]
    assert (eos["submitter"], eos["division"], eos["round"], eos["accelerator × count"], eos["system"]) == (
        "NVIDIA", "closed", "v4.0", "h100-sxm × 512", "Eos_n64")
    assert eos["time to train (min)"] == pytest.approx(3147.895 / 60)
    assert eos["run"] == f"/runs?run={run_ids[GPT3]}"  # the link to the result's run page
    assert set(run_ids.values()) <= {int(r.rsplit("=", 1)[1]) for r in table["run"]}


def test_the_mlperf_page_filters_and_sorts_from_the_url_as_its_export_does(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    query = "b=gpt3,llama2_70b_lora&sort=time to train (min)&desc=1"
    at = open_page("mlperf", query)
    shown = at.dataframe[0].value
    assert set(shown["benchmark"]) == {"gpt3", "llama2_70b_lora"}
    assert shown["time to train (min)"].tolist() == sorted(shown["time to train (min)"], reverse=True)
    exported = views.table("mlperf", views.state_from_query("mlperf", {"b": "gpt3,llama2_70b_lora",
                                                                       "sort": "time to train (min)", "desc": "1"}),
                           _engine())
    assert [numbers.derived(v) for v in exported["time to train (min)"].to_list()] == shown["time to train (min)"].tolist()
    assert exported["run"].to_list() == [int(r.rsplit("=", 1)[1]) for r in shown["run"]]


def test_an_uploaded_mlperf_result_previews_its_score_in_minutes(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((GPT3, (LOGS / GPT3).read_bytes(), "text/plain")).run()
    assert not at.exception, at.exception
    preview = {m.label: m.value for m in at.metric}
    assert preview["Time to train"] == "52.4649 min"
    assert preview["Devices"] == "512"
    assert float(preview["Model TFLOP/s/device (derived)"].replace(",", "")) > 700
    assert preview["Tokens/s/device (derived)"] != "—"


def test_a_filter_value_no_stored_result_has_is_said(run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("mlperf", "org=Nobody")
    assert not at.exception
    assert "No stored MLPerf result has submitter 'Nobody'" in " ".join(i.value for i in at.info).replace("\\", "")


def test_an_mlperf_runs_derived_figures_are_shown_to_six_significant_digits_not_as_float_noise(
        run_ids: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[GPT3]}")
    figures, claims = at.dataframe[0].value, at.dataframe[-1].value
    derived = [*figures[figures["evidence"] == "derived"]["value"],
               *claims[claims["figure from"] == "this run (derived)"]["value"]]
    assert len(derived) >= 4
    assert all(v == float(f"{v:.6g}") for v in derived), derived
    assert float(f"{_gpt3_tflops(_engine(), run_ids[GPT3]):.6g}") in derived
