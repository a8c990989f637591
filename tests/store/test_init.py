"""`perfledger init` is safe to start several times at once on one new PostgreSQL database."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from perfledger import store
from tests.conftest import DATA_DIR, ROOT
from tests.postgres_server import PgServer


def init(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "perfledger", "init", "--db", url, "--data", str(DATA_DIR)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def initialised_once(pg_server: PgServer) -> Iterator[str]:
    """A new database that one `perfledger init` filled, alone."""
    name = f"t_{uuid.uuid4().hex[:12]}_once"
    url = pg_server.create_database(name)
    alone = init(url)
    alone.communicate(timeout=300)
    assert alone.returncode == 0
    yield url
    pg_server.drop_database(name)


@pytest.mark.postgres
def test_three_inits_started_together_on_a_new_postgresql_database_all_succeed_with_one_seeded_store(
        pg_url: str, initialised_once: str) -> None:
    started = [init(pg_url) for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in started]
    assert [p.returncode for p in started] == [0, 0, 0], [err for _, err in outputs]
    assert sum("initialised; added" in out for out, _ in outputs) == 1, outputs
    engine = store.engine_from_url(pg_url)
    assert store.counts(engine) == store.counts(store.engine_from_url(initialised_once))
    with engine.connect() as conn:
        hashes = conn.scalar(sa.select(sa.func.count(sa.distinct(store.schema.run.c.content_sha256))))
    assert hashes == store.counts(engine)["run"] > 0
