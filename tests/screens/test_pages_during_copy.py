"""A copy or backup out of a DuckDB file does not lock the dashboard out: both only read the file, and readers
open it read-only, which DuckDB lets many processes do at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfledger.views.registry import PAGES
from tests.conftest import ROOT


def holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (DuckDB holds its file lock as long as the file is open)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fds / fd) == str(path) for fd in os.listdir(fds))
    except (FileNotFoundError, ProcessLookupError):
        return False


@contextmanager
def paused_while_reading(command: list[str], path: Path) -> Iterator[subprocess.Popen[str]]:
    """Start `command`, stop it (SIGSTOP) at a moment it has `path` open, yield; then let it finish."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None:
            if holds_open(proc.pid, path):
                proc.send_signal(signal.SIGSTOP)
                if holds_open(proc.pid, path):
                    break
                proc.send_signal(signal.SIGCONT)
        assert proc.poll() is None, f"the command ended before it was seen reading: {proc.communicate()}"
        yield proc
    finally:
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


def test_every_page_loads_while_a_copy_reads_the_store(seeded_url: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       open_page: Callable[..., AppTest]) -> None:
    monkeypatch.setenv("PERFLEDGER_LOCK_WAIT_S", "1")  # a page that met the lock would say "busy" within 1 s
    path = Path(seeded_url.removeprefix("duckdb:///"))
    copy = [sys.executable, "-m", "perfledger", "copy", "--from", seeded_url,
            "--to", f"duckdb:///{tmp_path / 'copy.duckdb'}"]
    with paused_while_reading(copy, path):
        for page in PAGES:
            at = open_page(page.slug)
            assert not at.exception, [e.value for e in at.exception]
            assert not at.error, (page.slug, [e.value for e in at.error])
