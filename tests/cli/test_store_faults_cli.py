"""Store faults on the command line are one sentence naming the store and the cause, for every command of
`python -m perfledger` and `python -m ingest`: a damaged file, a file another process holds, a PostgreSQL server
that stopped, a read-only volume, a folder refusing the writers' lock file, a full disk under the store or under the
temporary spool. Nothing stored is lost, and a store on a read-only volume or a full disk is still read.

Every command here runs as a real process, not in this one (tests/cli_runner.py): a fault leaves what a process
would drop at its exit (a DuckDB database invalidated by a failed write, an open file on a volume being unmounted,
the file-size limit the writers lift), and a lock must be held by a process other than the command's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfledger.spools import SPOOL_PREFIX
from tests.conftest import DATA_DIR, LOGS, ROOT
from tests.faults import Stoppable, fill, held_by_another_process, immutable, remount_read_only, volume
from tests.postgres_server import temporary_server

MEGATRON = str(LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out")
# (name, arguments after `python -m`): URL is the faulty store's; ELSEWHERE a healthy folder holding a backup
WRITERS = [
    ("init", ["perfledger", "init", "--db", "URL"]),
    ("rebuild", ["perfledger", "rebuild", "--db", "URL"]),
    ("delete", ["perfledger", "delete", "--run", "1", "--db", "URL"]),
    ("catalog link", ["perfledger", "catalog", "link", "Some GPU", "h100-sxm", "--all-sources", "--db", "URL"]),
    ("catalog add", ["perfledger", "catalog", "add", str(DATA_DIR / "models.csv"), "--db", "URL"]),
    ("ingest", ["ingest", MEGATRON, "--db", "URL"]),
    ("restore", ["perfledger", "restore", "ELSEWHERE/backup.duckdb", "--db", "URL"]),
]
READERS = [
    ("calc", ["perfledger", "calc", "model_tflops", "model=llama2-70b", "seq_len=4096",
              "tokens_per_s_per_device=1880", "--db", "URL"]),
    ("export", ["perfledger", "export", "overview", "", "--db", "URL"]),
    ("audit", ["perfledger", "audit", "--format", "csv", "--db", "URL"]),
    ("copy", ["perfledger", "copy", "--from", "URL", "--to", "duckdb:///ELSEWHERE/copy.duckdb"]),
    ("backup", ["perfledger", "backup", "ELSEWHERE/new-backup.duckdb", "--db", "URL"]),
]
COMMANDS = WRITERS + READERS
NAMES = [name for name, _ in COMMANDS]
# Every command meets a damaged file and a store another process holds. The faults after those meet the command
# line through the same opening of the store, so each takes a share of the commands in turn (every writer and
# every reader meets some): the 69 cases took 3.5 minutes of a 2-core run; these faults now meet 29 commands, not 45.


def share(commands: list[tuple[str, list[str]]], offset: int, every: int = 2) -> list[tuple[str, list[str]]]:
    return commands[offset % every::every]


def run(args: list[str], url: str, elsewhere: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m` the command, on the store at `url`, writing any new file into `elsewhere`."""
    filled = [a.replace("URL", url).replace("ELSEWHERE", str(elsewhere)) for a in args]
    return subprocess.run([sys.executable, "-m", *filled], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          check=False, env=os.environ | env)


def said_in_one_sentence(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("waiting for the store")]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def served(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@pytest.fixture
def seeded_file(seeded_db_file: Path, tmp_path: Path) -> Path:
    path = tmp_path / "ledger" / "store.duckdb"
    path.parent.mkdir()
    shutil.copy(seeded_db_file, path)
    return path


@pytest.fixture
def elsewhere(seeded_db_file: Path, tmp_path: Path) -> Path:
    """A healthy folder: where a copy or backup goes, and the backup a restore reads (a copy of the seeded store)."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    shutil.copy(seeded_db_file, path / "backup.duckdb")
    return path


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=NAMES)
def test_a_damaged_store_file_is_one_sentence(name: str, args: list[str], seeded_file: Path, elsewhere: Path) -> None:
    with seeded_file.open("r+b") as f:
        f.seek(4096)
        f.write(bytes(range(256)) * 20)
    said_in_one_sentence(run(args, f"duckdb:///{seeded_file}", elsewhere), seeded_file.name, "Corrupt")


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=NAMES)
def test_a_store_another_process_holds_is_one_sentence_naming_it(name: str, args: list[str], seeded_file: Path,
                                                                 elsewhere: Path) -> None:
    with held_by_another_process(seeded_file) as pid:
        done = run(args, f"duckdb:///{seeded_file}", elsewhere, PERFLEDGER_LOCK_WAIT_S="1")
    said_in_one_sentence(done, seeded_file.name, "busy", f"PID {pid}")


@pytest.fixture(scope="module")
def stopped_pg() -> Iterator[str]:
    """The URL of a seeded store on a PostgreSQL server that has stopped since."""
    with temporary_server() as server:
        url = server.create_database("seeded_then_stopped")
        assert subprocess.run([sys.executable, "-m", "perfledger", "init", "--db", url], cwd=ROOT,
                              capture_output=True, check=False).returncode == 0
        Stoppable(server).stop()
        yield url


@pytest.mark.postgres
@pytest.mark.parametrize(("name", "args"), share(COMMANDS, 0, every=3), ids=[n for n, _ in share(COMMANDS, 0, every=3)])
def test_a_postgresql_server_that_stopped_is_one_sentence(name: str, args: list[str], stopped_pg: str,
                                                          elsewhere: Path) -> None:
    said_in_one_sentence(run(args, stopped_pg, elsewhere), "seeded_then_stopped", "Connection refused")


@pytest.fixture
def read_only_volume(seeded_file: Path, tmp_path: Path) -> Iterator[Path]:
    with volume(tmp_path / "snapshot", "32m") as where:
        shutil.copy(seeded_file, where / "store.duckdb")
        remount_read_only(where)
        yield where / "store.duckdb"


@pytest.mark.parametrize(("name", "args"), WRITERS, ids=[n for n, _ in WRITERS])
def test_a_write_to_a_store_on_a_read_only_volume_names_the_volume(name: str, args: list[str], read_only_volume: Path,
                                                                   elsewhere: Path) -> None:
    done = run(args, f"duckdb:///{read_only_volume}", elsewhere)
    said_in_one_sentence(done, "store.duckdb", "Read-only file system", "PERFLEDGER_READ_ONLY=1")


@pytest.mark.parametrize(("name", "args"), READERS, ids=[n for n, _ in READERS])
def test_a_store_on_a_read_only_volume_is_read_by_every_reading_command(name: str, args: list[str],
                                                                         read_only_volume: Path,
                                                                         elsewhere: Path) -> None:
    served(run(args, f"duckdb:///{read_only_volume}", elsewhere))


def test_a_store_on_a_read_only_volume_is_served_in_read_only_mode(seeded_file: Path, read_only_volume: Path,
                                                                  elsewhere: Path) -> None:
    export = ["perfledger", "export", "sources", "", "--db", "URL"]
    there = run(export, f"duckdb:///{read_only_volume}", elsewhere, PERFLEDGER_READ_ONLY="1")
    assert there.returncode == 0 and there.stdout.count("\n") > 10, there.stderr
    assert there.stdout == run(export, f"duckdb:///{seeded_file}", elsewhere).stdout


@pytest.mark.parametrize(("name", "args"), share(WRITERS, 0), ids=[n for n, _ in share(WRITERS, 0)])
def test_a_write_into_a_folder_refusing_the_writers_lock_file_is_one_sentence(name: str, args: list[str],
                                                                              seeded_file: Path,
                                                                              elsewhere: Path) -> None:
    with immutable(seeded_file.parent):
        done = run(args, f"duckdb:///{seeded_file}", elsewhere)
    said_in_one_sentence(done, "store.duckdb", "store.duckdb.writers cannot be created")


@pytest.fixture
def full_disk(seeded_file: Path, tmp_path: Path) -> Iterator[Path]:
    """The seeded store on a volume with no byte left."""
    with volume(tmp_path / "full", "16m") as where:
        shutil.copy(seeded_file, where / "store.duckdb")
        filler = fill(where)
        yield where / "store.duckdb"
        filler.unlink()


@pytest.mark.parametrize(("name", "args"), share(WRITERS, 1), ids=[n for n, _ in share(WRITERS, 1)])
def test_a_write_to_a_store_on_a_full_disk_says_the_disk_is_full_and_loses_nothing(
        name: str, args: list[str], full_disk: Path, seeded_file: Path, elsewhere: Path) -> None:
    export = ["perfledger", "export", "sources", "", "--db", "URL"]
    before = run(export, f"duckdb:///{full_disk}", elsewhere).stdout
    done = run(args, f"duckdb:///{full_disk}", elsewhere)
    said_in_one_sentence(done, f"the disk holding {full_disk.parent} is full")
    after = run(export, f"duckdb:///{full_disk}", elsewhere)
    assert after.returncode == 0 and after.stdout == before and before.count("\n") > 10


@pytest.mark.parametrize(("name", "args"), share(READERS, 1), ids=[n for n, _ in share(READERS, 1)])
def test_a_store_on_a_full_disk_is_still_read(name: str, args: list[str], full_disk: Path, elsewhere: Path) -> None:
    served(run(args, f"duckdb:///{full_disk}", elsewhere))


@pytest.mark.parametrize("command", ["copy", "backup"])
def test_a_copy_onto_a_full_disk_says_the_disk_is_full(command: str, seeded_file: Path, tmp_path: Path) -> None:
    with volume(tmp_path / "full", "1m") as where:  # smaller than the seeded store
        args = dict(READERS)[command]
        said_in_one_sentence(run(args, f"duckdb:///{seeded_file}", where), f"the disk holding {where}", "is full")
        assert not (where / "new-backup.duckdb").exists()


def big_megatron_log(path: Path, steps: int) -> Path:
    """A Megatron-style log of `steps` iterations (varied figures, so its spooled Parquet does not shrink away)."""
    with path.open("w") as f:
        for i in range(1, steps + 1):
            f.write(f" iteration {i:8d}/ {steps:8d} | consumed samples: {i * 1024:12d} | elapsed time per iteration "
                    f"(ms): {150 + (i * 7919 % 1000) / 97:.3f} | learning rate: {i % 9973 * 1e-8:.4E} | global batch "
                    f"size:  1024 | lm loss: {2 + (i * 104729 % 10007) / 10007:.6E} | loss scale: 1.0 | grad norm: "
                    f"{(i * 31 % 997) / 997:.4f} | number of skipped iterations:   0 | number of nan iterations:   0 |\n")
    return path


def test_an_ingest_whose_spool_meets_a_full_disk_names_the_spools_disk_and_stores_nothing(
        seeded_file: Path, tmp_path: Path, elsewhere: Path) -> None:
    log = big_megatron_log(tmp_path / "long.log", 200_000)
    export = ["perfledger", "export", "runs", "", "--db", "URL"]
    before = run(export, f"duckdb:///{seeded_file}", elsewhere).stdout
    with volume(tmp_path / "spool", "1m") as where:
        done = run(["ingest", str(log), "--db", "URL"], f"duckdb:///{seeded_file}", elsewhere, TMPDIR=str(where))
        said_in_one_sentence(done, f"the temporary spool in {where}", "is full", "TMPDIR")
        assert not [p for p in where.iterdir() if p.name.startswith(SPOOL_PREFIX)]
    assert run(export, f"duckdb:///{seeded_file}", elsewhere).stdout == before
