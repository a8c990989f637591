"""Every page says a store fault in one sentence naming the store and the cause, never a traceback: a damaged
file, a file the process may not read, and a store whose writes fail for a full disk."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from perfledger.views.registry import PAGES

SLUGS = [p.slug for p in PAGES]
# the run list and the history (with no runs stored) read no catalog table
CATALOG_READERS = [s for s in SLUGS if s not in ("runs", "history")]


def damage(path: Path) -> None:
    """Overwrite a few KB past the header with noise: DuckDB's block checksums no longer match."""
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(bytes(range(256)) * 20)


def one_sentence(at: AppTest, *words: str) -> str:
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    text = errors[0].replace("\\", "")
    assert "Traceback" not in text and "\n" not in text.strip()
    for word in words:
        assert word in text, text
    return text


@pytest.mark.parametrize("slug", SLUGS)
def test_a_damaged_store_file_is_one_sentence_on_every_page(slug: str, seeded_url: str,
                                                             open_page: Callable[..., AppTest]) -> None:
    path = Path(seeded_url.removeprefix("duckdb:///"))
    damage(path)
    one_sentence(open_page(slug), path.name, "Corrupt")


@pytest.mark.parametrize("slug", SLUGS)
def test_a_store_that_is_not_a_database_is_one_sentence_on_every_page(slug: str, seeded_url: str, tmp_path: Path,
                                                                       open_page: Callable[..., AppTest]) -> None:
    path = Path(seeded_url.removeprefix("duckdb:///"))
    shutil.copy(Path(__file__), path)  # a text file where the store should be
    one_sentence(open_page(slug), path.name)


@pytest.mark.parametrize("slug", CATALOG_READERS)
def test_a_store_missing_its_catalog_tables_is_one_sentence_on_every_page(slug: str, seeded_url: str,
                                                                           open_page: Callable[..., AppTest]) -> None:
    """A damaged store whose results survive but whose source, model and accelerator tables are gone: the pages
    read those outside the page's table too (pickers, the source list)."""
    engine = sa.create_engine(seeded_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for table in ("source", "model", "accelerator"):
            conn.exec_driver_sql(f"DROP TABLE {table}")
    engine.dispose()
    one_sentence(open_page(slug), Path(seeded_url).name, "does not exist")
