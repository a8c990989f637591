"""The Campaigns page of AMD's and MangoBoost's MI300X results: each system's campaign leads with its own score and
the runs it still needs, with each run's goodput; a campaign holding both (a store imported before one campaign per
system) has no one score, one per submitter's system instead."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from tests.views.test_campaign_systems import both_in_one_campaign, import_folder


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return import_folder(tmp_path_factory)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    return both_in_one_campaign(tmp_path_factory)


def test_a_system_s_campaign_leads_with_its_score_the_runs_it_needs_and_each_run_s_goodput(
        imported: tuple[str, list[int]], open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_DB_URL", imported[0])
    at = open_page("campaigns", f"c={imported[1][0]}")
    assert not at.exception, [e.value for e in at.exception]
    assert (at.metric[0].label, at.metric[0].value) == ("Score: time to train (min, MLPerf's)", "none")
    assert any("needs 10 runs; the set has 1" in c.value.replace("\\", "") for c in at.caption)  # shown escaped
    tables = [t.value for t in at.dataframe]
    assert not any("still needed" in t.columns for t in tables)  # one system: no per-system table
    assert any("productive_s" in t.columns for t in tables)


def test_a_campaign_holding_both_systems_shows_the_scores_per_system(
        both: tuple[str, int], open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_DB_URL", both[0])
    at = open_page("campaigns", f"c={both[1]}")
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric[0].label == "Score: one per submitter's system (below)"
    scores = next(t.value for t in at.dataframe if "still needed" in t.value.columns)
    assert sorted(scores["submitter"].to_list()) == ["AMD", "MangoBoost"]
