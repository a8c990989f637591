"""`python -m ingest` killed (SIGKILL) at moments spread over its whole run, on each backend: the store then holds
the run complete or not at all, no row without its run, and no spool folder of the killed process."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.inputs import build
from perfledger import store
from tests.conftest import ROOT

KILLS = 8


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kills") / "megatron.log"
    build("megatron", 2_000_000, path)
    return path


def _ingest(log: Path, url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ingest", str(log), "--db", url], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _orphans(engine: sa.Engine) -> tuple[int, int]:
    with engine.connect() as conn:
        steps = conn.execute(sa.text("SELECT count(*) FROM step WHERE run_id NOT IN (SELECT id FROM run)")).scalar()
        results = conn.execute(sa.text("SELECT count(*) FROM result WHERE run_id IS NOT NULL "
                                       "AND run_id NOT IN (SELECT id FROM run)")).scalar()
    return int(steps or 0), int(results or 0)


def test_an_ingest_killed_at_any_moment_leaves_the_whole_run_or_nothing(
        big_log: Path, new_store_url: Callable[..., str], backend: str) -> None:
    reference_url = new_store_url("reference")
    started = time.monotonic()
    assert _ingest(big_log, reference_url).wait(timeout=120) == 0
    took = time.monotonic() - started
    complete = store.counts(store.engine_from_url(reference_url))
    assert complete["run"] == 1
    outcomes = []
    for i in range(KILLS):
        url = new_store_url(f"killed{i}")
        proc = _ingest(big_log, url)
        time.sleep(took * (i + 0.5) / KILLS)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        engine = store.engine_from_url(url)
        store.create_schema(engine)  # opening for writing: what the kill left is swept
        counts = store.counts(engine)
        outcomes.append(counts["run"])
        assert _orphans(engine) == (0, 0)
        assert counts["run"] in (0, 1)
        if counts["run"]:
            assert (counts["step"], counts["result"]) == (complete["step"], complete["result"])
        else:
            assert counts["step"] == 0
        assert not list(Path(tempfile.gettempdir()).glob(f"perfledger-*-{proc.pid}-*"))
        engine.dispose()
    print(f"{backend}: ingest {took:.1f} s, {KILLS} kills, runs stored after each: {outcomes}")
