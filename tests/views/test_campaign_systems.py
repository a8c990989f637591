"""A folder holding AMD's and MangoBoost's MI300X results for one benchmark: the two submitters' systems are never
one configuration. Imported now, they are two campaigns, each scored on its own and saying how many runs its score
still needs (its stored score, so a review's scaling factor stays in it); a campaign that holds both (a store
imported before one campaign per system) keys its Repeats on submitter and system and scores each system apart (the
page: tests/screens/test_campaign_systems_page.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from ingest.campaign import plan_round
from perfledger import store
from perfledger.views import campaigns
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
FILES = ("amd_mi300x_llama2_70b_lora_v5.1_result_0.txt", "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt")


def _folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The two result files in one folder beside a store loaded from data/: the folder and the store's URL."""
    root = tmp_path_factory.mktemp("mi300x")
    folder = root / "llama2_70b_lora"
    folder.mkdir()
    for name in FILES:
        shutil.copy(LOGS / name, folder / name)
    url = f"duckdb:///{root / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    return folder, url


def import_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    """The folder imported by `python -m ingest`: the store's URL and the ids of the campaigns it stored."""
    folder, url = _folder(tmp_path_factory)
    done = run("ingest", str(folder), "--json", env=os.environ | {"PERFLEDGER_DB_URL": url}, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return url, [int(line["campaign"]["id"]) for line in lines if "campaign" in line]


def both_in_one_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """The two files stored as one campaign, as a store imported before one campaign per system holds them."""
    folder, url = _folder(tmp_path_factory)
    engine = store.engine_from_url(url)
    planned = plan_round(folder, engine=engine)
    try:
        first, second = planned.plans
        both = replace(first, name=folder.name, attempts=first.attempts + second.attempts,
                       content_sha256=hashlib.sha256((first.content_sha256 + second.content_sha256).encode()).hexdigest())
        saved = store.save_campaign(engine, both)
    finally:
        planned.close()
    return url, saved.campaign_id


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return import_folder(tmp_path_factory)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    return both_in_one_campaign(tmp_path_factory)


def _submitters(url: str, campaign_id: int) -> dict[str, int]:
    frame = campaigns.repeats(store.engine_from_url(url), campaign_id)
    return {json.loads(c)["submitter"]: n for c, n in frame.select("configuration", "n").iter_rows()}


def test_the_folder_is_one_campaign_per_submitter_s_system_each_keyed_on_its_submitter(
        imported: tuple[str, list[int]]) -> None:
    url, ids = imported
    assert len(ids) == 2
    assert sorted((_submitters(url, cid) for cid in ids), key=str) == [{"AMD": 1}, {"MangoBoost": 1}]


def test_each_system_s_campaign_leads_with_its_stored_score_and_the_runs_it_still_needs(
        imported: tuple[str, list[int]]) -> None:
    url, ids = imported
    engine = store.engine_from_url(url)
    for cid in ids:
        header = campaigns.campaign_header(engine, cid) or {}
        scores = campaigns.system_scores(engine, cid)
        assert campaigns.score_headline(header, scores) == ("Score: time to train (min, MLPerf's)", "none")
        assert "needs 10 runs; the set has 1" in header["score_note"]


def test_a_stored_score_is_led_with_as_stored_not_recomputed_without_its_scaling_factor() -> None:
    """The per-system table recomputes the olympic mean from the runs; a campaign of one system leads with the score
    stored at import, which carries the review's scaling factor (the ASUSTeK score is 30.45 min scaled)."""
    header = {"kind": "mlperf", "score": 30.45 * 60, "score_unit": "s"}
    one_system = pl.DataFrame([("ASUSTeK", "ESC-N8A-E12", "llama2_70b_lora", 10, 10, 0, 29.9, "rule", "note")],
                              schema=campaigns.SCORE_SCHEMA, orient="row")
    assert campaigns.score_headline(header, one_system) == ("Score: time to train (min, MLPerf's)", "30.45")


def test_two_submitters_systems_in_one_campaign_are_never_one_configuration(both: tuple[str, int]) -> None:
    """Repeats treated them as one configuration: n=2, IQR 210.9 s."""
    assert _submitters(*both) == {"AMD": 1, "MangoBoost": 1}


def test_each_submitter_s_system_in_one_campaign_is_scored_on_its_own(both: tuple[str, int]) -> None:
    url, cid = both
    engine = store.engine_from_url(url)
    scores = campaigns.system_scores(engine, cid)
    rows = {r["submitter"]: r for r in scores.to_dicts()}
    assert set(rows) == {"AMD", "MangoBoost"}
    assert all(r["score (min)"] is None and r["runs"] == 1 and r["runs needed"] == 10 and r["still needed"] == 9
               for r in rows.values())
    label, value = campaigns.score_headline(campaigns.campaign_header(engine, cid) or {}, scores)
    assert label == "Score: one per submitter's system (below)" and value == "2 systems"
