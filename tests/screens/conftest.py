"""Real DuckDB stores for the page tests: one seeded from data/ per session, one empty."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import worker
from perfledger import store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def seeded_db(seeded_db_file: Path) -> Path:
    """The session's store seeded from data/ (tests.conftest): only copied, never opened."""
    return seeded_db_file


@pytest.fixture()
def seeded_url(seeded_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A per-test copy of the seeded store, set as PERFLEDGER_DB_URL (AppTest runs in this process)."""
    copy = tmp_path / "perfledger.duckdb"
    shutil.copy(seeded_db, copy)
    url = f"duckdb:///{copy}"
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    return url


@pytest.fixture()
def seeded_engine(seeded_url: str) -> Iterator[Engine]:
    engine = store.engine_from_url(seeded_url)
    yield engine
    engine.dispose()


@pytest.fixture()
def empty_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"duckdb:///{tmp_path / 'empty.duckdb'}"
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    return url


APP = str(ROOT / "dashboard.py")


def _open_page(slug: str, query: str | dict[str, str] = "") -> AppTest:
    """Run dashboard.py on the page registered under `slug` with the URL query set: one run (a page's script is
    named by its slug, which is how AppTest finds a page before st.navigation has registered any)."""
    from perfledger.views.registry import page

    at = AppTest.from_file(APP, default_timeout=30).switch_page(page(slug).file)
    params = dict(kv.split("=", 1) for kv in query.split("&")) if isinstance(query, str) and query else dict(query or {})
    at.query_params.update(params)
    return at.run()


@pytest.fixture()
def open_page() -> Callable[..., AppTest]:
    """open_page(slug, query="") -> AppTest after running that page (see _open_page)."""
    return _open_page


@pytest.fixture()
def parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """parses() -> every file a worker parsed whole so far, by name, in order."""
    record = tmp_path / "parses.txt"
    record.touch()
    monkeypatch.setenv("PERFLEDGER_TEST_PARSES", str(record))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setattr(worker, "COMMAND", (sys.executable, "-m", "tests.screens.counting_worker"))
    return lambda: record.read_text().splitlines()
