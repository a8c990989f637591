"""Every page says a store fault in one sentence naming the store and the cause, never a traceback: a damaged
file, a file that is not a database, missing tables, a file another process holds, a PostgreSQL server stopped
mid-session; the Delete panel on a read-only volume, in a folder that refuses new files, on a full disk (and the
run is kept). A store on a read-only volume is served on every page."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.views.registry import PAGES
from tests.conftest import DATA_DIR, LOGS
from tests.faults import Stoppable, fill, held_by_another_process, immutable, remount_read_only, volume
from tests.postgres_server import temporary_server

SLUGS = [p.slug for p in PAGES]
# the run list and the history (with no runs stored) read no catalog table
CATALOG_READERS = [s for s in SLUGS if s not in ("runs", "history", "campaigns")]  # with nothing ingested these read no catalog table


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


MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


@pytest.mark.parametrize("slug", SLUGS)
def test_a_store_another_process_holds_is_one_sentence_on_every_page(slug: str, seeded_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      open_page: Callable[..., AppTest]) -> None:
    monkeypatch.setenv("PERFLEDGER_LOCK_WAIT_S", "1")
    path = Path(seeded_url.removeprefix("duckdb:///"))
    with held_by_another_process(path) as pid:
        one_sentence(open_page(slug), "busy", f"PID {pid}", path.name)


@pytest.fixture(scope="module")
def stoppable_pg() -> Iterator[tuple[Stoppable, str]]:
    """A PostgreSQL server of this module's own (it is stopped and started again), with a seeded store."""
    with temporary_server() as server:
        url = server.create_database("seeded_then_stopped")
        store.init_store(store.engine_from_url(url), DATA_DIR)
        yield Stoppable(server), url


@pytest.mark.postgres
@pytest.mark.parametrize("slug", SLUGS)
def test_a_postgresql_server_stopped_mid_session_is_one_sentence_on_every_page(
        slug: str, stoppable_pg: tuple[Stoppable, str], monkeypatch: pytest.MonkeyPatch,
        open_page: Callable[..., AppTest]) -> None:
    server, url = stoppable_pg
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    at = open_page(slug)
    assert not at.exception and not at.error, [e.value for e in at.error]
    server.stop()
    try:
        one_sentence(at.run(), "seeded_then_stopped", "Connection refused")
    finally:
        server.start()


def with_a_run(url: str) -> int:
    run_id = ingest_path(store.engine_from_url(url), MEGATRON).run_id
    assert run_id is not None
    return run_id


def delete_on_page(open_page: Callable[..., AppTest], run_id: int) -> AppTest:
    """The Runs page's Delete panel, confirmed and pressed, for `run_id`."""
    at = open_page("runs", f"run={run_id}")
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.checkbox(key="ru_del_ok").check().run()
    return at.button(key="ru_del").click().run()


def kept(url: str, run_id: int, steps: int) -> bool:
    engine = store.engine_from_url(url)
    return store.run(engine, run_id) is not None and store.steps(engine, run_id).height == steps


@pytest.fixture
def on_read_only_volume(seeded_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    """The seeded store with one run, on a volume mounted read-only, as PERFLEDGER_DB_URL (read-only mode off)."""
    run_id = with_a_run(seeded_url)
    with volume(tmp_path / "snapshot", "32m") as where:
        shutil.copy(seeded_url.removeprefix("duckdb:///"), where / "store.duckdb")
        remount_read_only(where)
        url = f"duckdb:///{where / 'store.duckdb'}"
        monkeypatch.setenv("PERFLEDGER_DB_URL", url)
        yield url, run_id


@pytest.mark.parametrize("slug", SLUGS)
def test_a_store_on_a_read_only_volume_is_served_on_every_page(slug: str, on_read_only_volume: tuple[str, int],
                                                               open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug)
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_deleting_from_a_store_on_a_read_only_volume_is_one_sentence_and_keeps_the_run(
        on_read_only_volume: tuple[str, int], open_page: Callable[..., AppTest]) -> None:
    url, run_id = on_read_only_volume
    steps = store.steps(store.engine_from_url(url), run_id).height
    one_sentence(delete_on_page(open_page, run_id), "store.duckdb", "Read-only file system", "PERFLEDGER_READ_ONLY=1")
    assert kept(url, run_id, steps)


def test_deleting_from_a_store_whose_folder_refuses_new_files_is_one_sentence_and_keeps_the_run(
        seeded_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    shutil.copy(seeded_url.removeprefix("duckdb:///"), folder / "store.duckdb")
    url = f"duckdb:///{folder / 'store.duckdb'}"
    run_id = with_a_run(url)
    steps = store.steps(store.engine_from_url(url), run_id).height
    (folder / "store.duckdb.writers").unlink()
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    with immutable(folder):
        one_sentence(delete_on_page(open_page, run_id), "store.duckdb", "store.duckdb.writers cannot be created")
    assert kept(url, run_id, steps)


def test_deleting_from_a_store_on_a_full_disk_says_the_disk_is_full_and_keeps_the_run(
        seeded_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    run_id = with_a_run(seeded_url)
    steps = store.steps(store.engine_from_url(seeded_url), run_id).height
    with volume(tmp_path / "full", "16m") as where:
        shutil.copy(seeded_url.removeprefix("duckdb:///"), where / "store.duckdb")
        url = f"duckdb:///{where / 'store.duckdb'}"
        monkeypatch.setenv("PERFLEDGER_DB_URL", url)
        filler = fill(where)
        one_sentence(delete_on_page(open_page, run_id), "store.duckdb", f"the disk holding {where} is full")
        filler.unlink()
        assert kept(url, run_id, steps)


def test_an_upload_whose_temporary_folder_is_on_a_full_disk_names_that_disk_and_stores_nothing(
        seeded_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    engine = store.engine_from_url(seeded_url)
    before = store.counts(engine)
    with volume(tmp_path / "uploads", "1m") as where:
        monkeypatch.setattr(tempfile, "tempdir", str(where))  # where the page puts an upload for its worker
        at = open_page("runs")
        raw = MEGATRON.read_bytes() * 8  # larger than the volume
        at = at.file_uploader(key="ru_file").set_value((MEGATRON.name, raw, "text/plain")).run()
        one_sentence(at, f"the temporary spool in {where}", "is full", "TMPDIR")
        assert list(where.iterdir()) == []
    assert store.counts(engine) == before
