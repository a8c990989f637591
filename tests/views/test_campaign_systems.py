"""A folder holding AMD's and MangoBoost's MI300X results for one benchmark: the two submitters' systems are never
one configuration (Repeats), each gets its own MLPerf score under its benchmark's rule, saying how many runs it still
needs, and the campaign has no one score (the page: tests/pages/test_campaign_systems_page.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfledger import store
from perfledger.views import campaigns

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
FILES = ("amd_mi300x_llama2_70b_lora_v5.1_result_0.txt", "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt")


def import_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """The two result files in one folder, imported as one campaign into a store loaded from data/: its URL and id."""
    folder = tmp_path_factory.mktemp("mi300x")
    (folder / "llama2_70b_lora").mkdir()
    for name in FILES:
        shutil.copy(LOGS / name, folder / "llama2_70b_lora" / name)
    url = f"duckdb:///{folder / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    done = subprocess.run([sys.executable, "-m", "ingest", str(folder / "llama2_70b_lora"), "--json"], cwd=ROOT,
                          env=os.environ | {"PYTHONPATH": str(ROOT), "PERFLEDGER_DB_URL": url},
                          capture_output=True, text=True, check=True)
    return url, int(json.loads(done.stdout.strip().splitlines()[-1])["campaign"]["id"])


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    return import_folder(tmp_path_factory)


def test_two_submitters_systems_are_never_one_configuration(campaign: tuple[str, int]) -> None:
    """Repeats treated them as one configuration: n=2, IQR 210.9 s."""
    url, cid = campaign
    frame = campaigns.repeats(store.engine_from_url(url), cid)
    keyed = {json.loads(c)["submitter"]: n for c, n in frame.select("configuration", "n").iter_rows()}
    assert keyed == {"AMD": 1, "MangoBoost": 1}


def test_each_submitter_s_system_is_scored_on_its_own_and_says_how_many_runs_it_still_needs(
        campaign: tuple[str, int]) -> None:
    url, cid = campaign
    engine = store.engine_from_url(url)
    scores = campaigns.system_scores(engine, cid)
    rows = {r["submitter"]: r for r in scores.to_dicts()}
    assert set(rows) == {"AMD", "MangoBoost"}
    assert all(r["score (min)"] is None and r["runs"] == 1 and r["runs needed"] == 10 and r["still needed"] == 9
               for r in rows.values())
    label, value = campaigns.score_headline(campaigns.campaign_header(engine, cid) or {}, scores)
    assert label == "Score: one per submitter's system (below)" and value == "2 systems"
