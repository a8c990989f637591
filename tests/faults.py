"""Faults of the storage under a store, made for real: small tmpfs volumes (full, read-only), a folder that refuses
new files (immutable), another process holding the DuckDB file, a PostgreSQL server stopped and started again, a
PostgreSQL server whose data sits on a small volume. Each skips where this process may not make it (mounting and
chattr need root)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.postgres_server import PgServer, _as_postgres, find_bin_dir, temporary_server


def _mount(path: Path, *options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0


@contextmanager
def volume(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` for the block."""
    if os.geteuid() != 0 or shutil.which("mount") is None or not _mount(where, f"size={size}"):
        pytest.skip("no tmpfs mount here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    """Fill the volume holding `where` to the last byte; the filler file, to remove to free the space."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for block in (1 << 16, 1 << 12, 1):
            try:
                while os.write(fd, b"\0" * block):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def free(filler: Path, nbytes: int) -> None:
    """Give `nbytes` of a filled volume back (the filler's tail)."""
    os.truncate(filler, max(filler.stat().st_size - nbytes, 0))


# Nothing but a test's own statements writes to the server's files while its disk is full: no autovacuum and no
# timed checkpoint (a checkpoint that cannot write its files PANICs), a minimal write-ahead log (no standby
# snapshots written every 15 s), synchronous commits (a commit writes the log itself, see `log_writer_paused`).
QUIET_SERVER = ("autovacuum=off", "checkpoint_timeout=1d", "max_wal_size=4GB", "wal_level=minimal",
                "max_wal_senders=0", "synchronous_commit=on")


@contextmanager
def postgres_on_a_volume(size: str, *, wal_too: bool) -> Iterator[tuple[PgServer, Path]]:
    """A PostgreSQL server whose data directory is on a tmpfs of `size`, its write-ahead log on the ordinary disk
    unless `wal_too`; the server and where the volume is mounted (in the system's temporary folder: the server's
    user cannot reach pytest's)."""
    where = Path(tempfile.mkdtemp(prefix="perfledger-pg-volume-"))
    try:
        with volume(where, size), temporary_server(data_on=where, wal_apart=not wal_too,
                                                   settings=QUIET_SERVER) as server:
            yield server, where
    finally:
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def log_writer_paused(server: PgServer) -> Iterator[None]:
    """The server's WAL writer stopped (SIGSTOP) for the block: it wakes on its own every 200 ms to write the log's
    completed pages, so without this a test could not tell whether its session or the WAL writer writes first."""
    with server.admin() as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'").fetchone()
    assert row is not None
    os.kill(int(row[0]), signal.SIGSTOP)
    try:
        yield
    finally:
        with suppress(ProcessLookupError):  # killed by its postmaster meanwhile
            os.kill(int(row[0]), signal.SIGCONT)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


@contextmanager
def immutable(folder: Path) -> Iterator[Path]:
    """`folder` refusing new files (chattr +i) for the block; its files stay writable."""
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True,
                                                        check=False).returncode != 0:
        pytest.skip("chattr +i refused here")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


@contextmanager
def held_by_another_process(path: Path) -> Iterator[int]:
    """Another process holding the DuckDB file `path` open for writing; its PID."""
    code = f"import duckdb, sys; c = duckdb.connect({str(path)!r}); print('open', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        yield proc.pid
    finally:
        proc.communicate(input="", timeout=30)


class Stoppable:
    """A PostgreSQL server this test may stop and start again (its own, never the session's)."""

    def __init__(self, server: PgServer) -> None:
        self.server = server
        with server.admin() as conn:
            self.data = str(conn.execute("SHOW data_directory").fetchone()[0])  # type: ignore[index]
            self.sockets = str(conn.execute("SHOW unix_socket_directories").fetchone()[0])  # type: ignore[index]
        bin_dir = find_bin_dir()
        assert bin_dir is not None
        self.pg_ctl = str(bin_dir / "pg_ctl")

    def stop(self) -> None:
        subprocess.run(_as_postgres([self.pg_ctl, "-D", self.data, "-m", "fast", "-w", "stop"]), check=True,
                       capture_output=True)

    def stopped_by_itself(self, timeout_s: float = 30.0) -> bool:
        """Whether the server stopped on its own (its postmaster gone) within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while (Path(self.data) / "postmaster.pid").exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.server.port} -k {self.sockets}"
        log = str(Path(self.data).parent / "restarted.log")  # a log file, so pg_ctl does not wait on our pipe
        subprocess.run(_as_postgres([self.pg_ctl, "-D", self.data, "-o", options, "-l", log, "-w", "start"]),
                       check=True, capture_output=True)
