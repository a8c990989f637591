"""Faults of the storage under a store, made for real: small tmpfs volumes (full, read-only), a folder that refuses
new files (immutable), another process holding the DuckDB file, a PostgreSQL server stopped and started again.
Each skips where this process may not make it (mounting and chattr need root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.postgres_server import PgServer, _as_postgres, find_bin_dir


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

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.server.port} -k {self.sockets}"
        log = str(Path(self.data).parent / "restarted.log")  # a log file, so pg_ctl does not wait on our pipe
        subprocess.run(_as_postgres([self.pg_ctl, "-D", self.data, "-o", options, "-l", log, "-w", "start"]),
                       check=True, capture_output=True)
