"""The Overview counts an ingested run's figures as what they are: measured, from how many runs, not "(not stated)"."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ingest import pipeline
from perfledger import views

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def test_figures_measured_from_ingested_runs_are_named_with_their_run_count(seeded_store: Engine) -> None:
    before = views.table("overview", views.OverviewView(), seeded_store)
    pipeline.ingest_path(seeded_store, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    after = views.table("overview", views.OverviewView(), seeded_store)
    measured = after.filter(after["kind"] == "measured from 1 ingested run").to_dicts()
    assert len(measured) == 1 and measured[0]["runs"] == 1 and measured[0]["sources"] == 0
    assert measured[0]["result rows"] == after["result rows"].sum() - before["result rows"].sum()
    assert "(not stated)" not in after["kind"].to_list()
    assert set(before["runs"].to_list()) == {0}
