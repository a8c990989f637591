"""The Campaigns page: every campaign with its score and rule, and one campaign's attempts (failures with their
reason) and repeats with their spread, the rule named on screen."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest.campaign import import_folder

CAMPAIGNS = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns"


def test_a_submission_shows_its_olympic_score_with_the_rule_and_its_ten_repeats(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    saved = import_folder(seeded_engine, CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora").saved
    assert saved is not None
    at = open_page("campaigns", f"c={saved.campaign_id}")
    assert not at.exception, at.exception
    assert (at.metric[0].label, at.metric[0].value) == ("Score: time to train (min, MLPerf's)", "30.45")  # 1,765.73 s x scaling.json 1.0347
    assert any("MLPerf olympic mean" in m.value and "10 runs" in m.value for m in at.markdown)
    attempts, repeats = at.dataframe[0].value, at.dataframe[1].value
    assert len(attempts) == 10 and set(attempts["kind"]) == {"completed"}
    assert repeats["n"].tolist() == [10]


def test_a_campaign_names_its_ci_check_and_links_its_runs_and_their_history(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    saved = import_folder(seeded_engine, CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora").saved
    assert saved is not None
    at = open_page("campaigns", f"c={saved.campaign_id}")
    assert not at.exception, at.exception
    assert [c.value for c in at.code] == [f"python -m perfledger check campaign:{saved.campaign_id}"]
    labels = [link.proto.label.replace("\\", "") for link in at.get("page_link")]  # as shown, unescaped
    assert sum(label.startswith("History of llama2-70b · h100-sxm · 8") for label in labels) == 1
    assert sum(label.startswith("Run ") for label in labels) == 10


def test_failed_jobs_of_a_sweep_are_rows_with_their_reason(seeded_engine: Engine,
                                                          open_page: Callable[..., AppTest]) -> None:
    saved = import_folder(seeded_engine, CAMPAIGNS / "bigscience_gpt2_meg_base_sweep").saved
    assert saved is not None
    at = open_page("campaigns", f"c={saved.campaign_id}")
    assert not at.exception, at.exception
    attempts = at.dataframe[0].value
    timeout = attempts[attempts["kind"] == "timeout"]
    assert len(attempts) == 5 and timeout["reason"].str.contains("DUE TO TIME LIMIT").all()
    assert {m.label: m.value for m in at.metric[1:]} == {"cancelled": "4", "timeout": "1"}


def test_the_list_names_every_campaign(seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    import_folder(seeded_engine, CAMPAIGNS / "dgxc_llama31_405b_gb200_jobs")
    at = open_page("campaigns")
    assert not at.exception, at.exception
    listed = at.dataframe[0].value
    assert listed["name"].tolist() == ["dgxc_llama31_405b_gb200_jobs"] and listed["kind"].tolist() == ["job table"]
    assert at.selectbox(key="ca_c").options == ["every campaign", "1: dgxc_llama31_405b_gb200_jobs"]  # not escaped


def test_each_attempt_links_to_its_run_page(seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    saved = import_folder(seeded_engine, CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora").saved
    assert saved is not None
    at = open_page("campaigns", f"c={saved.campaign_id}")
    assert not at.exception, at.exception
    hrefs = at.dataframe[0].value["run_id"].tolist()
    assert len(hrefs) == 10 and all(h.startswith("/runs?run=") for h in hrefs)
    assert len(set(hrefs)) == 10


def test_the_campaign_list_reads_its_columns_in_words(seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    assert import_folder(seeded_engine, CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora").saved
    at = open_page("campaigns")
    assert not at.exception, at.exception
    labels = {name: c.get("label") for name, c in json.loads(at.dataframe[0].proto.columns).items()}
    assert labels["imported_at"] == "imported (UTC)" and labels["score_rule"] == "score rule"
    assert labels["score_unit"] == "score unit"
