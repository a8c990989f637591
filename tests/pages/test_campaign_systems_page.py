"""The Campaigns page of a folder holding AMD's and MangoBoost's MI300X results: no one score, one per submitter's
system with the runs it still needs, and each run's goodput."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from tests.views.test_campaign_systems import import_folder


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    return import_folder(tmp_path_factory)


def test_the_campaigns_page_shows_the_scores_per_system_and_each_run_s_goodput(
        campaign: tuple[str, int], open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_DB_URL", campaign[0])
    at = open_page("campaigns", f"c={campaign[1]}")
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric[0].label == "Score: one per submitter's system (below)"
    tables = [t.value for t in at.dataframe]
    scores = next(t for t in tables if "still needed" in t.columns)
    assert sorted(scores["submitter"].to_list()) == ["AMD", "MangoBoost"]
    assert any("productive_s" in t.columns for t in tables)
