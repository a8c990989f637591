"""Shared fixtures: real DuckDB files in temporary folders, seeded from the project's own data/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from perfledger import store

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
LOGS = ROOT / "tests" / "fixtures" / "logs"


@pytest.fixture(scope="session")
def seeded_db_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seed") / "seeded.duckdb"
    store.init_store(store.engine_from_url(f"duckdb:///{path}"), DATA_DIR)
    return path


@pytest.fixture(scope="session")
def seeded_engine(seeded_db_file: Path) -> Engine:
    """The bundled data, loaded once per session; tests must not write to it."""
    return store.engine_from_url(f"duckdb:///{seeded_db_file}")


@pytest.fixture
def writable_engine(seeded_db_file: Path, tmp_path: Path) -> Iterator[Engine]:
    """A private copy of the seeded store, for tests that write."""
    path = tmp_path / "store.duckdb"
    shutil.copy(seeded_db_file, path)
    yield store.engine_from_url(f"duckdb:///{path}")


@pytest.fixture
def empty_engine(tmp_path: Path) -> Engine:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'empty.duckdb'}")
    store.create_schema(engine)
    return engine
