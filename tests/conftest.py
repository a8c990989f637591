"""Shared fixtures: real DuckDB files in temporary folders and a real PostgreSQL, seeded from data/.

`backend`-parametrized fixtures (`store_url`, `store_engine`, `seeded_store`, `new_store_url`) run a test body on
each backend: a DuckDB file, PostgreSQL (marked `postgres`, deselect with -m "not postgres") and, in the modules
of LAKE_MODULES with PERFLEDGER_TEST_DUCKLAKE=1, a PostgreSQL store whose steps live in a DuckLake under the test's
folder (marked `postgres` and `ducklake`).
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings
from sqlalchemy import Engine

from perfledger import store

if TYPE_CHECKING:
    from tests.postgres_server import PgServer

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
LOGS = ROOT / "tests" / "fixtures" / "logs"

# Sweeps over the fixture logs take the first two logs of each format (what they prove differs by format, not by
# file); PERFLEDGER_TEST_SWEEP=every takes every log, after a change to a parser, detection or the run page.
EVERY_LOG = os.environ.get("PERFLEDGER_TEST_SWEEP") == "every"


def per_format(names: Iterable[str], each: int = 2) -> list[str]:
    """The first `each` of `names` (fixture log file names) of each format their expected summary names; a name
    with no expected summary is a kind of its own. Every name under PERFLEDGER_TEST_SWEEP=every."""
    if EVERY_LOG:
        return sorted(names)
    formats = {p.name.removesuffix(".expected.json"): json.loads(p.read_text()).get("format")
               for p in LOGS.glob("*.expected.json")}
    taken: Counter[str] = Counter()
    kept = []
    for name in sorted(names):
        kind = formats.get(name) or name
        if taken[kind] < each:
            taken[kind] += 1
            kept.append(name)
    return kept


# Property tests: the suite's profile tries 60 cases a property (a test that needs fewer says so in its own
# @settings); HYPOTHESIS_PROFILE=thorough tries 600, after a change to a parser, a scanner or an order statistic.
settings.register_profile("suite", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=600, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def _run_temp(factory: pytest.TempPathFactory) -> Path:
    """The folder every process of this test run shares: xdist's workers each get a subfolder of it."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`name` in the run's shared folder, built by `build(path)` by the first process that asks for it (the others
    wait on a lock), so a file every worker reads is made once per run, not once per worker."""
    shared = _run_temp(factory)
    path = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = shared / f"{name}.partial"
            if partial.is_dir():  # a build that failed before: started again from nothing
                shutil.rmtree(partial)
            partial.unlink(missing_ok=True)
            build(partial)
            partial.rename(path)
    return path


def _seed(path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{path}")
    store.init_store(engine, DATA_DIR)
    engine.dispose()


@pytest.fixture(scope="session", autouse=True)
def components_scanned_once() -> None:
    """Each AppTest scans every installed distribution for Streamlit components (0.3 s of a 0.5 s page run); the
    installed set does not change within a session, so the first scan serves every later AppTest."""
    from streamlit.components.v2 import manifest_scanner  # only here: most workers never run a page

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture(scope="session")
def seeded_db_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled data in a DuckDB file of this process's own, copied from one built once per run (a DuckDB file
    is opened for writing by one process at a time)."""
    path = tmp_path_factory.mktemp("seed") / "seeded.duckdb"
    shutil.copy(built_once(tmp_path_factory, "seeded.duckdb", _seed), path)
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


# ------------------------------------------------------------------ both engines: DuckDB file and PostgreSQL

BACKENDS = ("duckdb", pytest.param("postgresql", marks=pytest.mark.postgres))
LAKE = pytest.param("ducklake", marks=[pytest.mark.postgres, pytest.mark.ducklake])
# The modules whose backend-parametrized tests also run on a DuckLake store when PERFLEDGER_TEST_DUCKLAKE=1: what a
# store of steps does (write, read, delete, copy, count), not what one engine's SQL does (PostgreSQL's COPY reads,
# upgrades of older files) nor what pages do with it. Off by default: the lake's own tests (test_lake*.py) run
# always; this runs the store tests a third time.
LAKE_MODULES = frozenset({
    "tests/store/test_store.py", "tests/store/test_campaigns.py", "tests/store/test_reading.py",
    "tests/store/test_stamp.py", "tests/store/test_run_list.py", "tests/team/test_copy.py",
})
LAKE_SWITCH = "PERFLEDGER_TEST_DUCKLAKE"
_PG_SEED_TEMPLATE = "perfledger_seed_template"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        module = Path(str(metafunc.definition.fspath)).relative_to(ROOT).as_posix()
        lake = module in LAKE_MODULES and os.environ.get(LAKE_SWITCH) == "1"
        metafunc.parametrize("backend", [*BACKENDS, LAKE] if lake else BACKENDS, indirect=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server: PERFLEDGER_TEST_PG_URL when set, else a throwaway cluster for this session (one per
    xdist worker: each worker is a session)."""
    from tests.postgres_server import ENV_URL, server_from_url, temporary_server

    if os.environ.get(ENV_URL):
        yield server_from_url(os.environ[ENV_URL])
        return
    with temporary_server() as server:
        yield server


@pytest.fixture(scope="session")
def pg_seed_template(pg_server: PgServer) -> Iterator[str]:
    """A database loaded from data/ once per session; tests get copies (CREATE DATABASE ... TEMPLATE)."""
    name = f"{_PG_SEED_TEMPLATE}_{uuid.uuid4().hex[:8]}"
    engine = store.engine_from_url(pg_server.create_database(name))
    store.init_store(engine, DATA_DIR)
    engine.dispose()
    yield name
    pg_server.drop_database(name)


@pytest.fixture(scope="session")
def lake_seed_template(pg_server: PgServer, pg_seed_template: str) -> Iterator[str]:
    """A database holding data/ without a step table: what a DuckLake store's ledger holds before its lake exists
    (the lake's catalog pins its data path, so each test's lake is made on its copy, under the test's folder)."""
    name = f"{_PG_SEED_TEMPLATE}_lake_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name, template=pg_seed_template)
    engine = store.engine_from_url(pg_server.url(name))
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE step")
    engine.dispose()
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """duckdb, postgresql or ducklake (see pytest_generate_tests)."""
    return str(request.param)


def lake_url(pg_url: str, data_path: Path) -> str:
    """The DuckLake store URL of a PostgreSQL database (its ledger and its lake's catalog) and a steps folder."""
    return f"ducklake+postgresql://{pg_url.split('://', 1)[1]}?data_path={data_path}"


@pytest.fixture
def new_store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """A factory of URLs of fresh, empty stores (no tables) on the test's backend; `seeded=True` copies data/."""
    made: list[str] = []

    def make(name: str = "store", *, seeded: bool = False) -> str:
        if backend == "duckdb":
            path = tmp_path / f"{name}.duckdb"
            if seeded:
                shutil.copy(request.getfixturevalue("seeded_db_file"), path)
            return f"duckdb:///{path}"
        server = request.getfixturevalue("pg_server")
        db = f"t_{uuid.uuid4().hex[:12]}_{name}"[:63]
        kind = "lake_seed_template" if backend == "ducklake" else "pg_seed_template"
        template = request.getfixturevalue(kind) if seeded else None
        url = server.create_database(db, template=template)
        made.append(db)
        if backend != "ducklake":
            return str(url)
        url = lake_url(url, tmp_path / f"{name}-steps")
        if seeded:  # the lake's step table beside the copied ledger
            store.create_schema(store.engine_from_url(url))
        return url

    yield make
    if made:
        server = request.getfixturevalue("pg_server")
        for db in made:
            server.drop_database(db)


@pytest.fixture
def store_url(new_store_url: Callable[..., str]) -> str:
    """The URL of a fresh, empty store (no tables yet) on DuckDB (a file) or PostgreSQL (a new database)."""
    return new_store_url()


@pytest.fixture
def store_engine(new_store_url: Callable[..., str]) -> Iterator[Engine]:
    """An empty store with the tables created, on each backend."""
    engine = store.engine_from_url(new_store_url("empty"))
    store.create_schema(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def seeded_store(new_store_url: Callable[..., str]) -> Iterator[Engine]:
    """A private, writable copy of the store loaded from data/, on each backend."""
    engine = store.engine_from_url(new_store_url("seeded", seeded=True))
    yield engine
    engine.dispose()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (no tables), dropped after the test; for PostgreSQL-only tests."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = pg_server.create_database(name)
    yield url
    pg_server.drop_database(name)
