"""One query per render: the Download button renders the table already on screen, and the input rows read only
the rows a table could have come from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import store, views
from perfledger.views import registry
from tests.conftest import ROOT


@pytest.fixture()
def seeded_url(seeded_db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    copy = tmp_path / "perfledger.duckdb"
    copy.write_bytes(seeded_db_file.read_bytes())
    url = f"duckdb:///{copy}"
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    return url


def _counting(calls: list[str]) -> tuple[registry.Page[Any], ...]:
    def wrap(page: registry.Page[Any]) -> registry.Page[Any]:
        def table(state: Any, engine: Engine, inner: Callable[..., pl.DataFrame] = page.table) -> pl.DataFrame:
            calls.append(page.slug)
            return inner(state, engine)
        return replace(page, table=table)
    return tuple(wrap(p) for p in registry.PAGES)


@pytest.mark.parametrize("slug", [p.slug for p in registry.PAGES if p.slug != "runs"])
def test_a_page_render_computes_its_table_once(slug: str, seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=30).run()
    at.switch_page(registry.page(slug).file)
    monkeypatch.setattr(registry, "PAGES", _counting(calls))
    at.run()
    assert not at.exception, at.exception
    assert calls == [slug]


def test_input_rows_ask_the_store_for_the_table_metrics_only(seeded_db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = store.engine_from_url(f"duckdb:///{seeded_db_file}")
    table = views.table("speedups", views.SpeedupView(), engine)
    asked: list[dict[str, Any]] = []
    results = store.results

    def spy(engine: Engine, **filters: Any) -> pl.DataFrame:
        asked.append(filters)
        return results(engine, **filters)

    monkeypatch.setattr(store, "results", spy)
    rows = views.input_rows(table, engine)
    assert asked == [{"metric": sorted(set(table["metric"])), "columns": views.output.INPUT_COLUMNS}]
    assert "mfu" not in asked[0]["metric"]
    ids = {*table["baseline result id"].drop_nulls(), *table["candidate result id"].drop_nulls()}
    assert set(rows["id"]) == ids and rows.columns == list(views.output.INPUT_COLUMNS)
