"""A long log stores on DuckDB and on PostgreSQL through the upload worker under its default limits, and a store
holding it copies to and from either backend, every step number (past 2**32) kept, in bounded memory.

A 519 MB nanoGPT log of 10 M steps was refused by DuckDB ("failed to pin block") where 2 M stored, and a copy into
DuckDB failed from 491,520 steps. The log here is 600,000 steps: past that copy's threshold, six times the spool's
in-memory rows, twelve copy batches and a DuckDB insert larger than its 32 MB limit, so every bounded path runs in
pieces (the insert's own limit is tested below it, in tests/store/test_store.py). Size is measured, not tested:
`bench/run.py` times a 1 GB log's ingest and its peak memory against a tiny one's, and bench/README.md gives each
process's peak at 10 M steps. A minute or two on 2 cores: deselect with -m "not long".
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from ingest import worker
from perfledger import schema, store
from perfledger.settings import load_settings
from tests.postgres_server import PgServer

pytestmark = pytest.mark.long

STEPS = 600_000
FIRST_STEP = 2**32  # a step number no 32-bit column holds, from the log to the copy back
ROOT = Path(__file__).resolve().parents[2]
# Peak resident memory of one process (parse, store or copy) whatever the run's length: 10 M steps peaked at
# 157-360 MB here; a process that held 10 M steps needs over 1 GB for them.
MOST_RSS_MB = 600


def write_nanogpt_log(path: Path, n: int, first_step: int = 0) -> None:
    """n steps from `first_step` as nanoGPT's train.py prints them (`iter N: loss X, time Yms, mfu Z%`), in
    500k-line chunks."""
    rng = np.random.default_rng(0)
    with path.open("w") as f:
        f.write("tokens per iteration will be: 491,520\nnumber of parameters: 123.59M\n")
        for first in range(first_step, first_step + n, 500_000):
            i = np.arange(first, min(first_step + n, first + 500_000))
            loss = 4.0 - np.log1p(i - first_step) / 10 + rng.random(i.size) * 0.01
            ms, mfu = 100 + rng.random(i.size) * 5, 30 + rng.random(i.size)
            f.write("".join(f"iter {a}: loss {b:.4f}, time {c:.2f}ms, mfu {d:.2f}%\n"
                            for a, b, c, d in zip(i.tolist(), loss.tolist(), ms.tolist(), mfu.tolist(), strict=True)))


# Starts the command and writes its peak RSS (kB) to argv[1]. A child's peak counts its parent's memory at the fork
# (Linux carries it over to the new program), so the command is started from this small process, not from pytest.
_MEASURE = ("import os, sys; pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ); "
            "_, status, usage = os.wait4(pid, 0); open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); "
            "sys.exit(os.waitstatus_to_exitcode(status))")


def run_measured(args: list[str], env: dict[str, str]) -> float:
    """Run a child process to its end (a non-zero exit fails the test with its stderr); its peak resident memory
    in MB."""
    with tempfile.TemporaryDirectory() as folder:
        peak, err = Path(folder) / "peak", Path(folder) / "stderr"
        with err.open("wb") as stderr:
            done = subprocess.run([sys.executable, "-c", _MEASURE, str(peak), *args], env={**os.environ, **env},
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, check=False)
        assert done.returncode == 0, err.read_text(errors="replace")[-2000:]
        return int(peak.read_text()) / 1024


def worker_step(what: str, folder: Path, db_url: str) -> float:
    """One upload worker step (prepare or save) on `folder` under the default limits; its peak RSS in MB."""
    defaults = load_settings({})
    args = [*worker.COMMAND, what, str(folder), "--timeout-s", "3000", "--memory-mb", str(defaults.ingest_memory_mb)]
    rss = run_measured(args, {**worker.CHILD_ENV, "PERFLEDGER_DB_URL": db_url})
    result = (folder / "result.json").read_text()
    assert '"ok"' in result, result
    return rss


@pytest.fixture(scope="module")
def prepared_upload(tmp_path_factory: pytest.TempPathFactory, seeded_db_file: Path) -> tuple[Path, float]:
    """The log parsed by the upload worker into a prepared run (kept: each store below saves it); its peak RSS."""
    folder = tmp_path_factory.mktemp("upload")
    write_nanogpt_log(folder / "upload", STEPS, FIRST_STEP)
    (folder / "request.json").write_text('{"file_name": "nanogpt-long.log", "limit": null, "overrides": {}}')
    return folder, worker_step("prepare", folder, f"duckdb:///{seeded_db_file}")


def step_count(url: str) -> int:
    engine = store.engine_from_url(url)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(sa.select(sa.func.count()).select_from(schema.step)) or 0)
    finally:
        engine.dispose()


def last_step(url: str) -> int:
    engine = store.engine_from_url(url)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(sa.select(sa.func.max(schema.step.c.step))) or 0)
    finally:
        engine.dispose()


def test_a_long_log_stores_and_copies_both_ways_with_its_64_bit_steps_in_bounded_memory(
        prepared_upload: tuple[Path, float], new_store_url: Callable[..., str], backend: str,
        pg_server: PgServer, tmp_path: Path) -> None:
    folder, parse_rss = prepared_upload
    seeded = new_store_url("seeded", seeded=True)
    before = step_count(seeded)
    save_rss = worker_step("save", folder, seeded)
    assert step_count(seeded) == before + STEPS
    other = "postgresql" if backend == "duckdb" else "duckdb"
    out = _other_backend_url(other, tmp_path, pg_server)
    back = new_store_url("back")
    copy = [sys.executable, "-m", "perfledger", "copy", "--from"]
    out_rss = run_measured([*copy, seeded, "--to", out], {})
    back_rss = run_measured([*copy, out, "--to", back], {})
    assert step_count(out) == step_count(back) == before + STEPS
    assert last_step(seeded) == last_step(out) == last_step(back) == FIRST_STEP + STEPS - 1
    peaks = {"parse": parse_rss, f"store into {backend}": save_rss, f"copy to {other}": out_rss,
             f"copy back to {backend}": back_rss}
    print("peak RSS (MB):", {k: round(v) for k, v in peaks.items()})  # shown with -s: bench/README's figures
    assert max(peaks.values()) < MOST_RSS_MB, peaks


def _other_backend_url(backend: str, tmp_path: Path, pg_server: PgServer) -> str:
    if backend == "duckdb":
        return f"duckdb:///{tmp_path / 'other.duckdb'}"
    return pg_server.create_database(f"t_other_{tmp_path.name}"[:63].lower())
