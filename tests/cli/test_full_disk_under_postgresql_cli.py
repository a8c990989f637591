"""A full disk under a PostgreSQL server, made for real (its data directory on a small volume, filled to the last
byte): `python -m ingest` says the disk is full in one sentence naming the store, stores nothing and leaves every
stored run readable and exported byte for byte as before; once space is freed the same ingest stores the run. With
the write-ahead log on the full volume too, the server PANICs and stops: the ingest says the disk is full and that
the server stopped, the next command that the server cannot be reached, and nothing stored is lost once it starts
again."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from perfledger import store, views
from perfledger.views.registry import PAGES
from tests.conftest import LOGS, ROOT
from tests.faults import Stoppable, fill, free, log_writer_paused, postgres_on_a_volume

pytestmark = pytest.mark.postgres

LONG = LOGS / "siddanthemani_gpt2_124m_8xa100_main.log"  # 19,552 steps: the step table has to grow
SHORT = LOGS / "bigscience_meg_gpt2_base_n8_tp4_pp8_v100.out"  # 20 steps
FULL = "the disk holding the database server's data is full"


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False, env=os.environ)


def one_sentence(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def ledger(url: str) -> tuple[dict[str, int], dict[str, bytes], dict[int, pl.DataFrame]]:
    """What the store holds: its row counts, every page's export, every run's steps."""
    engine = store.engine_from_url(url)
    try:
        run_ids = store.runs(engine)["id"].to_list()
        return (store.counts(engine), {p.slug: views.export(p.slug, "", engine) for p in PAGES},
                {run_id: store.steps(engine, run_id) for run_id in run_ids})
    finally:
        engine.dispose()


def same_ledger(url: str, before: tuple[dict[str, int], dict[str, bytes], dict[int, pl.DataFrame]]) -> None:
    counts, exports, steps = ledger(url)
    assert counts == before[0]
    assert exports == before[1]
    assert steps.keys() == before[2].keys() and all(steps[i].equals(before[2][i]) for i in steps)
    assert len(steps) >= 5 and all(frame.height for frame in steps.values())  # the demo runs `init` stored


@pytest.fixture(scope="module")
def on_a_volume() -> Iterator[tuple[str, Path]]:
    """An initialised store on a PostgreSQL server whose data directory (not its log) is on a 64 MB volume."""
    with postgres_on_a_volume("64m", wal_too=False) as (server, where):
        url = server.create_database("ledger_on_a_full_disk")
        assert command("perfledger", "init", "--db", url).returncode == 0
        yield url, where


def test_an_ingest_onto_a_full_disk_says_so_stores_nothing_and_stores_the_run_once_space_is_freed(
        on_a_volume: tuple[str, Path]) -> None:
    url, where = on_a_volume
    before = ledger(url)
    filler = fill(where)
    try:
        one_sentence(command("ingest", str(LONG), "--db", url), "ledger_on_a_full_disk", FULL)
        same_ledger(url, before)
        assert command("perfledger", "export", "runs", "", "--db", url).stdout.encode() == before[1]["runs"]
    finally:
        filler.unlink()
    done = command("ingest", str(LONG), "--db", url)
    assert done.returncode == 0 and "stored as run" in done.stdout, done.stderr
    assert ledger(url)[0]["step"] == before[0]["step"] + 19_552


def test_a_full_disk_under_the_write_ahead_log_stops_the_server_and_loses_nothing() -> None:
    with postgres_on_a_volume("64m", wal_too=True) as (server, where):
        url = server.create_database("ledger_and_log_on_a_full_disk")
        assert command("perfledger", "init", "--db", url).returncode == 0
        before = ledger(url)
        stoppable = Stoppable(server)
        filler = fill(where)
        free(filler, 4 << 20)  # room for the run's rows; not for the log's next 16 MB segment
        with server.admin() as conn:
            conn.execute("SELECT pg_switch_wal()")  # the next write of the log needs that segment
        with log_writer_paused(server):  # the ingest's commit is the first to write it
            done = command("ingest", str(SHORT), "--db", url)
        one_sentence(done, "ledger_and_log_on_a_full_disk", FULL, "the database server stopped")
        assert stoppable.stopped_by_itself()
        one_sentence(command("perfledger", "export", "runs", "", "--db", url), "ledger_and_log_on_a_full_disk",
                     "Connection refused")
        filler.unlink()
        stoppable.start()
        same_ledger(url, before)
        done = command("ingest", str(SHORT), "--db", url)
        assert done.returncode == 0 and "stored as run" in done.stdout, done.stderr
