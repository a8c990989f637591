"""A store on a PostgreSQL server whose disk is full, made for real (its data directory on a small volume, filled
to the last byte): every page still loads, and storing an upload from the Runs page says the disk is full in one
sentence naming the store and stores nothing; once space is freed the same upload is stored."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfledger import store
from perfledger.views.registry import PAGES
from tests.conftest import DATA_DIR, LOGS
from tests.faults import fill, postgres_on_a_volume
from tests.screens.test_store_faults import one_sentence

pytestmark = pytest.mark.postgres

LONG = LOGS / "siddanthemani_gpt2_124m_8xa100_main.log"  # 19,552 steps: the step table has to grow
FULL = "the disk holding the database server's data is full"


@pytest.fixture(scope="module")
def on_a_volume() -> Iterator[tuple[str, Path]]:
    """An initialised store on a PostgreSQL server whose data directory (not its log) is on a 64 MB volume."""
    with postgres_on_a_volume("64m", wal_too=False) as (server, where):
        url = server.create_database("pages_on_a_full_disk")
        engine = store.engine_from_url(url)
        store.init_store(engine, DATA_DIR)
        engine.dispose()
        yield url, where


@pytest.fixture
def full_disk(on_a_volume: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """The store's URL (as PERFLEDGER_DB_URL) with its volume filled; the filler, to remove to free the space."""
    url, where = on_a_volume
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    filler = fill(where)
    yield url, filler
    filler.unlink(missing_ok=True)


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_every_page_of_a_store_on_a_full_disk_loads(slug: str, full_disk: tuple[str, Path],
                                                    open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug)
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_storing_an_upload_onto_a_full_disk_says_so_and_stores_it_once_space_is_freed(
        full_disk: tuple[str, Path], open_page: Callable[..., AppTest]) -> None:
    url, filler = full_disk
    engine = store.engine_from_url(url)
    before = store.counts(engine)
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((LONG.name, LONG.read_bytes(), "text/plain")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    one_sentence(at.button(key="ru_commit").click().run(), "pages_on_a_full_disk", FULL)
    assert store.counts(engine) == before
    filler.unlink()
    at.button(key="ru_commit").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    stored = store.find_run(engine, hashlib.sha256(LONG.read_bytes()).hexdigest())
    assert [s.value for s in at.success] == [f"Stored as run {stored}: [open it](/runs?run={stored})."]
    assert store.counts(engine)["step"] == before["step"] + 19_552
