"""An upload on disk: spooled in chunks with its content hash (of the decompressed bytes, as the store keys runs),
its folder named after its browser session and removed once that session has ended; the worker's memory limit
said as such, never as a store error or a signal."""

from __future__ import annotations

import gzip
import io
import os
import signal
import sys
from pathlib import Path

import pytest

from ingest import pipeline, upload, worker
from perfledger.errors import FileTooLarge
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
NO_STORE = "duckdb:///:memory:"


def test_a_spooled_upload_carries_the_hash_a_run_of_its_content_is_stored_under(tmp_path: Path) -> None:
    raw = MEGATRON.read_bytes()
    plain = upload.spool(io.BytesIO(raw), MEGATRON.name, 2**30)
    zipped = upload.spool(io.BytesIO(gzip.compress(raw)), MEGATRON.name + ".gz", 2**30)
    prepared = pipeline.prepare(raw, MEGATRON.name)
    prepared.close()
    assert plain.content_sha256 == zipped.content_sha256 == prepared.content_sha256
    assert plain.path.read_bytes() == raw and plain.size == len(raw) and zipped.raw_sha256 != zipped.content_sha256
    for spooled in (plain, zipped):
        spooled.close()
        assert not spooled.folder.exists()


def test_an_upload_past_the_limit_is_refused_before_any_parse_and_leaves_no_folder(tmp_path: Path) -> None:
    before = set(Path(upload.tempfile.gettempdir()).glob(f"{upload.FOLDER_PREFIX}{os.getpid()}-*"))
    for raw in (bytes(2**20 + 1), gzip.compress(bytes(2**20 + 1))):
        with pytest.raises(FileTooLarge, match=r"^big: larger than the 1 MiB limit once decompressed"):
            upload.spool(io.BytesIO(raw), "big", 2**20)
    assert set(Path(upload.tempfile.gettempdir()).glob(f"{upload.FOLDER_PREFIX}{os.getpid()}-*")) == before


def test_folders_of_sessions_that_ended_are_removed_and_the_others_kept(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload.tempfile, "tempdir", str(tmp_path))
    live, gone = "2f0c7b0e-1111-4a4a-9b9b-000000000001", "2f0c7b0e-2222-4a4a-9b9b-000000000002"
    kept = [upload.upload_folder(live), upload.upload_folder("")]  # no owner: its caller removes it
    spooled = upload.spool(io.BytesIO(b"abandoned preview"), "log.txt", None, owner=gone)
    job = worker.start_prepare(spooled.path, "log.txt", NO_STORE, None, worker.Limits(1, 2048), owner=gone)
    job.stop()
    other_server = tmp_path / f"{upload.FOLDER_PREFIX}{os.getppid()}-{gone}-x1y2"
    other_server.mkdir()
    assert upload.folder_owner(spooled.folder) == gone and upload.folder_owner(kept[0]) == live
    removed = upload.remove_abandoned(lambda sid: sid == live)
    assert sorted(removed) == sorted([spooled.folder, job.folder])
    assert all(p.exists() for p in [*kept, other_server]) and not spooled.folder.exists()


def test_a_memory_limit_below_what_the_worker_loads_is_said_as_such_not_as_a_store_error() -> None:
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 300))
    with pytest.raises(worker.IngestStopped) as stopped:
        worker.prepared_from(worker.wait(job))
    assert str(stopped.value) == ("the upload's worker needs more than 300 MB of memory to start, whatever the log; "
                                  "raise PERFLEDGER_INGEST_MEMORY_MB (about 1024 MB or more); nothing was stored")


def test_a_worker_that_a_native_allocation_failure_ends_says_the_log_needs_more_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A native library that cannot allocate under the limit says so and aborts its process, once loaded: Polars
    here, asked for 1.6 GB under 700 MB."""
    dies = ("import resource, sys; from pathlib import Path; import polars as pl; Path(sys.argv[2], 'loaded').touch(); "
            "s = 700 * 2**20; resource.setrlimit(resource.RLIMIT_AS, (s, s)); pl.int_range(0, 200_000_000, eager=True)")
    monkeypatch.setattr(worker, "COMMAND", (sys.executable, "-c", dies))
    job = worker.start_prepare(MEGATRON.read_bytes(), MEGATRON.name, NO_STORE, None, worker.Limits(120, 500))
    with pytest.raises(worker.IngestStopped) as stopped:
        worker.prepared_from(worker.wait(job))
    assert job.proc.returncode == -signal.SIGABRT
    assert str(stopped.value) == ("the log needs more than 500 MB of memory to read; raise "
                                  "PERFLEDGER_INGEST_MEMORY_MB; nothing was stored")
