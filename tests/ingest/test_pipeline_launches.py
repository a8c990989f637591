"""A file with several launches stores every launch and summarises the longest one."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes, preview
from perfledger import schema, store

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SMOKE_THEN_MAIN = LOGS / "cscs_gh200_smoke2_then_main_10n4g_rankprefix.out"
MAIN_ALONE = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
GAUDI_THREE_LAUNCHES = LOGS / "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log"


def test_a_smoke_test_before_the_main_run_is_summarised_as_the_main_run() -> None:
    both = preview(SMOKE_THEN_MAIN.read_bytes(), SMOKE_THEN_MAIN.name)
    main = preview(MAIN_ALONE.read_bytes(), MAIN_ALONE.name)
    assert both.summary.steady_state_json() == main.summary.steady_state_json()
    assert both.summary.config == main.summary.config
    assert both.summary.config["n_devices"] == 40  # the main run's world size, not the smoke test's 1
    assert both.summary.steady is not None and both.summary.steady.last_step == 344


def test_the_json_lists_every_launch_and_marks_the_one_summarised() -> None:
    launches = preview(SMOKE_THEN_MAIN.read_bytes(), SMOKE_THEN_MAIN.name).as_json()["launches"]
    assert [(x["launch"], x["first_step"], x["last_step"], x["steps"], x["summarised"]) for x in launches] == [
        (1, 1, 2, 2, False), (2, 1, 344, 344, True)]
    assert launches[0]["wall_time_s"] == pytest.approx(9.3138 + 6.2826)


def test_every_launch_is_stored_and_the_same_bytes_stay_one_run(writable_engine: Engine) -> None:
    raw = SMOKE_THEN_MAIN.read_bytes()
    first = ingest_bytes(writable_engine, raw, SMOKE_THEN_MAIN.name)
    again = ingest_bytes(writable_engine, raw, SMOKE_THEN_MAIN.name)
    assert first.created and not again.created and again.run_id == first.run_id
    assert first.run_id is not None
    steps = store.steps(writable_engine, first.run_id)
    assert steps.group_by("launch").len().sort("launch").rows() == [(1, 2), (2, 344)]
    stored = store.run(writable_engine, first.run_id)
    assert stored is not None and stored.summary is not None
    assert [x["summarised"] for x in stored.summary["launches"]] == [False, True]


def test_three_launches_whose_numbering_restarts_summarise_the_longest() -> None:
    outcome = preview(GAUDI_THREE_LAUNCHES.read_bytes(), GAUDI_THREE_LAUNCHES.name)
    launches = outcome.as_json()["launches"]
    longest = max(launches, key=lambda x: x["steps"])
    assert longest["summarised"]
    assert outcome.steps == sum(x["steps"] for x in launches)  # no launch dropped


def test_a_store_made_before_launches_gets_the_column(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'old.duckdb'}")
    old = sa.MetaData()
    sa.Table("step", old, *[sa.Column(c.name, c.type) for c in schema.step.columns if c.name != "launch"])
    with engine.begin() as conn:
        old.create_all(conn)
    store.create_schema(engine)
    with engine.connect() as conn:
        names = {c["name"] for c in sa.inspect(conn).get_columns("step")}
    assert "launch" in names
