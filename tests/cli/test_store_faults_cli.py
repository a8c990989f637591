"""Store faults on the command line are one sentence naming the store and the cause: a full disk called a full
disk, a read-only volume named, and a store on a read-only volume served in read-only mode. The volumes are
small tmpfs mounts (skipped where this process may not mount)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _mount(path: Path, *options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0


def _volume(where: Path, size: str) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None or not _mount(where, f"size={size}"):
        pytest.skip("no tmpfs mount here")
    yield where
    subprocess.run(["umount", str(where)], check=False)


@pytest.fixture
def full_volume(tmp_path: Path) -> Iterator[Path]:
    """1 MiB: smaller than the seeded store."""
    yield from _volume(tmp_path / "full", "1m")


@pytest.fixture
def volume(tmp_path: Path) -> Iterator[Path]:
    yield from _volume(tmp_path / "volume", "32m")


def perfledger(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfledger", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False, env=os.environ | env)


def said_in_one_sentence(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_copy_onto_a_full_disk_says_the_disk_is_full(seeded_db_file: Path, full_volume: Path) -> None:
    done = perfledger("copy", "--from", f"duckdb:///{seeded_db_file}", "--to",
                      f"duckdb:///{full_volume / 'copy.duckdb'}")
    said_in_one_sentence(done, f"the disk holding {full_volume} is full")


def test_a_write_to_a_store_on_a_read_only_volume_names_the_volume(seeded_db_file: Path, volume: Path) -> None:
    shutil.copy(seeded_db_file, volume / "store.duckdb")
    subprocess.run(["mount", "-o", "remount,ro", str(volume)], check=True)
    done = perfledger("delete", "--run", "1", "--db", f"duckdb:///{volume / 'store.duckdb'}")
    said_in_one_sentence(done, "store.duckdb", "Read-only file system", "PERFLEDGER_READ_ONLY=1")


def test_a_store_on_a_read_only_volume_is_served_in_read_only_mode(seeded_db_file: Path, volume: Path) -> None:
    shutil.copy(seeded_db_file, volume / "store.duckdb")
    subprocess.run(["mount", "-o", "remount,ro", str(volume)], check=True)
    url = f"duckdb:///{volume / 'store.duckdb'}"
    served = perfledger("export", "sources", "", "--db", url, PERFLEDGER_READ_ONLY="1")
    assert served.returncode == 0 and served.stdout.count("\n") > 10, served.stderr
    assert served.stdout == perfledger("export", "sources", "", "--db", f"duckdb:///{seeded_db_file}").stdout
