"""The upload worker: a child process per step, stopped at its time or memory limit with one sentence."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ingest import worker
from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.store import leftovers
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
NO_STORE = "duckdb:///:memory:"


def test_a_worker_past_its_time_limit_is_killed_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "COMMAND", (sys.executable, "-c", "import time; time.sleep(60)"))
    started = time.monotonic()
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(0.5, 2048))
    with pytest.raises(worker.IngestStopped, match=r"^the upload took longer than 0.5 s to read and was stopped; "
                                                   r"nothing was stored$"):
        worker.prepared_from(worker.wait(job))
    assert time.monotonic() - started < 5
    assert job.proc.returncode is not None and job.proc.returncode < 0  # killed, not waited out
    assert not job.folder.exists()


def test_a_worker_past_its_memory_limit_is_stopped_and_says_so() -> None:
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 64))
    with pytest.raises(worker.IngestStopped, match=r"^the upload's worker needs more than 64 MB of memory to start, "
                                                   r"whatever the log; raise PERFLEDGER_INGEST_MEMORY_MB"):
        worker.prepared_from(worker.wait(job))
    assert not job.folder.exists()


def test_a_log_the_parser_refuses_comes_back_as_its_sentence() -> None:
    job = worker.start_prepare(bytes(range(256)) * 16, "garbage.bin", NO_STORE, None, worker.Limits(120, 2048))
    with pytest.raises(PerfledgerError, match=r"^garbage\.bin: .*not a log format"):
        worker.prepared_from(worker.wait(job))
    assert not job.folder.exists()


def test_a_prepared_run_keeps_its_steps_in_its_folder_until_closed() -> None:
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048))
    prepared = worker.prepared_from(worker.wait(job))
    files = prepared.run.steps.files
    assert prepared.run.steps.rows > 0 and files and all(Path(f).parent == prepared.folder / "steps" for f in files)
    assert not (prepared.folder / "upload").exists()  # the uploaded bytes go once parsed
    # ours lives (a dead server's folders in the same temp dir may go: that is what the sweep is for)
    assert prepared.folder not in leftovers.remove_dead_spools(prepared.folder.parent) and prepared.folder.exists()
    prepared.run.close()
    assert not prepared.folder.exists()


def test_the_folder_of_a_server_that_died_is_removed_by_the_next_writer(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True,
                          text=True)
    left = tmp_path / f"{worker.FOLDER_PREFIX}{int(dead.stdout)}-abc"
    (left / "steps").mkdir(parents=True)
    assert leftovers.remove_dead_spools(tmp_path) == [left] and not left.exists()


def test_the_form_choices_travel_in_the_request_and_the_prepared_run_carries_them() -> None:
    chosen = {"accelerator": "NVIDIA GeForce RTX 5090", "devices": 2, "precision": "fp8", "model": "Some Model 3B"}
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048), chosen)
    assert json.loads((job.folder / "request.json").read_text())["overrides"] == chosen
    prepared = worker.prepared_from(worker.wait(job))
    config = prepared.run.config
    assert (config["accelerator"], config["n_devices"], config["precision"]) == ("rtx-5090", 2, "fp8")
    assert config["model_as_printed"] == "Some Model 3B"  # not in the catalog: kept as typed, warned, not refused
    assert any("'Some Model 3B' is not in the catalog" in w for w in prepared.run.warnings)
    prepared.close()


def test_a_count_that_is_not_positive_comes_back_as_its_sentence() -> None:
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048),
                               {"devices": -1})
    with pytest.raises(PerfledgerError, match=r"^--devices must be positive, got -1$"):
        worker.prepared_from(worker.wait(job))


@pytest.mark.parametrize(("error", "memory"), [
    (MemoryError(), True),
    (ImportError("/x/_collections_cy.cpython-311-x86_64-linux-gnu.so: failed to map segment from shared object"), True),
    (OSError(errno.ENOMEM, "Cannot allocate memory"), True),
    (ImportError("No module named 'x'"), False),
    (OSError(errno.ENOENT, "No such file or directory"), False),
])
def test_a_library_that_cannot_load_under_the_memory_limit_is_a_memory_stop(error: BaseException,
                                                                           memory: bool) -> None:
    assert worker.out_of_memory(error) is memory


def _loaded_then(python: str) -> tuple[str, ...]:
    """A worker command that gets past loading (it marks its folder so) and then runs `python`."""
    script = f"import os, signal, sys, time; from pathlib import Path; Path(sys.argv[2], 'loaded').touch(); {python}"
    return (sys.executable, "-c", script)


def test_a_worker_killed_from_outside_says_the_signal_not_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "COMMAND", _loaded_then("time.sleep(60)"))
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048))
    deadline = time.monotonic() + 30
    while not (job.folder / "loaded").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(job.proc.pid, signal.SIGKILL)  # as the system's out-of-memory killer, or an operator, would
    with pytest.raises(worker.IngestStopped, match=r"^the upload's worker was killed \(signal SIGKILL\) before it "
                                                   r"could read it, by another process or by the system"):
        worker.prepared_from(worker.wait(job))


def test_a_worker_that_crashes_says_so_with_its_signal_not_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "COMMAND", _loaded_then("import ctypes; ctypes.string_at(0)"))  # a NULL read
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 2048))
    with pytest.raises(worker.IngestStopped, match=r"^the upload's worker crashed \(signal SIGSEGV\) trying to read "
                                                   r"it, a fault in a library it uses"):
        worker.prepared_from(worker.wait(job))


def test_a_worker_writing_a_file_past_its_size_limit_is_stopped_and_says_so(tmp_path: Path) -> None:
    from ingest import campaign_job
    from tests.ingest.test_campaign_zip import archive_of

    zipped = tmp_path / "big.zip"
    zipped.write_bytes(archive_of("big.log", b"iteration 1\n" * 300_000))  # 3.4 MB once unpacked, 1 MB allowed
    job = campaign_job.start_campaign(zipped, "big.zip", NO_STORE, 64 * 2**20, worker.Limits(120, 2048, file_mb=1))
    with pytest.raises(worker.IngestStopped, match=r"^the upload's worker was stopped writing a file larger than 1 MB "
                                                   r"\(an unpacked file or a spool of its steps\); raise "
                                                   r"PERFLEDGER_INGEST_FILE_MB; nothing was stored$"):
        campaign_job.campaign_from(worker.wait(job))
    assert job.proc.returncode == -signal.SIGXFSZ
    job.cancel()


def test_the_store_file_is_written_past_the_workers_file_size_limit(writable_engine: Any) -> None:
    """The cap is on the worker's own files (spools, unpacked members), never on the store's, larger than any upload."""
    store_file = Path(str(writable_engine.url.database))
    limits = worker.Limits(120, 2048, file_mb=1)
    assert store_file.stat().st_size > 2**20
    url = writable_engine.url.render_as_string(hide_password=False)
    prepared = worker.prepared_from(worker.wait(worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, url, None,
                                                                     limits)))
    saved = worker.saved_from(worker.wait(worker.start_save(prepared, url, limits)))
    prepared.close()
    assert saved.created and store.run(writable_engine, saved.run_id) is not None
