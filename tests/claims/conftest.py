"""The claims tests' store: a DuckDB file of its own, a copy of the session's store seeded from data/ (catalog,
sources, results)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perfledger import store


@pytest.fixture()
def seeded(seeded_db_file: Path, tmp_path: Path) -> store.Engine:
    shutil.copy(seeded_db_file, tmp_path / "x.duckdb")
    return store.engine_from_url(f"duckdb:///{tmp_path / 'x.duckdb'}")
