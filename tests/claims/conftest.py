"""The claims tests' store: a DuckDB file of its own, initialised from data/ (catalog, sources, results)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfledger import store


@pytest.fixture()
def seeded(tmp_path: Path) -> store.Engine:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'x.duckdb'}")
    store.init_store(engine, Path(__file__).parents[2] / "data")
    return engine
