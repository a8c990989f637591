"""A spare worker per store waits with its modules loaded: a job handed to it is parsed as a fresh worker would
parse it (its stderr in the job's folder, its limits applied once it has the job), and a new spare is started."""

from __future__ import annotations

import os
import time

import pytest

from ingest import spare, worker
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
NO_STORE = "duckdb:///:memory:"


def _waiting_spare() -> int:
    worker.prime(NO_STORE)
    key = spare._key(worker.COMMAND, {**os.environ, **worker.CHILD_ENV, "PERFLEDGER_DB_URL": NO_STORE})
    return spare._SPARES[key].pid


def test_a_job_handed_to_the_spare_is_prepared_by_it_and_a_new_spare_waits() -> None:
    pid = _waiting_spare()
    time.sleep(0.5)
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048))
    assert job.proc.pid == pid
    prepared = worker.prepared_from(worker.wait(job))
    assert prepared.run.steps.rows == 343 and (prepared.folder / "stderr.log").exists()
    prepared.close()
    assert _waiting_spare() != pid


def test_a_spare_loaded_past_the_memory_limit_says_the_worker_cannot_start() -> None:
    pid = _waiting_spare()
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 300))
    assert job.proc.pid == pid
    with pytest.raises(worker.IngestStopped, match=r"^the upload's worker needs more than 300 MB of memory to start"):
        worker.prepared_from(worker.wait(job))
