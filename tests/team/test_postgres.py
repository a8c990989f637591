"""PostgreSQL as the team's store: `init` from the CLI, and every page's table identical to DuckDB's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfledger import store, views
from tests.conftest import ROOT

pytestmark = pytest.mark.postgres


def test_cli_init_on_postgresql_builds_the_store_and_a_second_init_adds_nothing(pg_url: str) -> None:
    def init() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "perfledger", "init", "--db", pg_url], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=False)

    first, second = init(), init()
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "initialised; added" in first.stdout and "demo runs" in first.stdout
    assert "already up to date; nothing added" in second.stdout and "demo runs" not in second.stdout
    counts = store.counts(store.engine_from_url(pg_url))
    assert counts["run"] >= 1 and counts["step"] > 0 and counts["result"] > 900


def test_every_page_shows_the_same_table_on_postgresql_as_on_duckdb(seeded_db_file: Path, pg_url: str) -> None:
    pg = store.engine_from_url(pg_url)
    store.copy_store(store.engine_from_url(f"duckdb:///{seeded_db_file}"), pg)
    duck = store.engine_from_url(f"duckdb:///{seeded_db_file}")
    for slug, state_cls in views.PAGE_STATES.items():
        on_duck, on_pg = views.table(slug, state_cls(), duck), views.table(slug, state_cls(), pg)
        assert on_pg.schema == on_duck.schema, slug
        assert views.render(on_pg) == views.render(on_duck), slug


def test_dashboard_pages_run_on_postgresql(pg_url: str, seeded_db_file: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from screens import PAGES

    store.copy_store(store.engine_from_url(f"duckdb:///{seeded_db_file}"), store.engine_from_url(pg_url))
    monkeypatch.setenv("PERFLEDGER_DB_URL", pg_url)
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=30).run()
    for page in PAGES:
        at.switch_page(page.file).run()
        assert not at.exception, (page.slug, at.exception)
        assert not at.error, (page.slug, [e.value for e in at.error])
