"""`perfledger backup FILE` and `perfledger restore FILE`: a store restored from its backup exports the same bytes
on every page as the original, on DuckDB and on PostgreSQL."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ingest.pipeline import ingest_path
from perfledger import cli, store
from perfledger.views.registry import PAGES
from tests.cli_runner import run
from tests.conftest import LOGS


def perfledger(*args: str) -> subprocess.CompletedProcess[str]:
    return run("perfledger", *args)


def exports(url: str, queries: list[tuple[str, str]], capsysbinary: pytest.CaptureFixture[bytes],
            ) -> dict[tuple[str, str], bytes]:
    """What `perfledger export SLUG QUERY --db URL` prints, for each (slug, query)."""
    out = {}
    for slug, query in queries:
        assert cli.main(["export", slug, query, "--db", url]) == 0
        out[slug, query] = capsysbinary.readouterr().out
    return out


def test_a_store_restored_from_its_backup_exports_the_same_bytes_on_every_page(
        new_store_url: Callable[..., str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    original = new_store_url("original", seeded=True)
    engine = store.engine_from_url(original)
    run_id = ingest_path(engine, LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out").run_id
    ingest_path(engine, LOGS / "claims_example.csv")
    backup, restored = tmp_path / "ledger-backup.duckdb", new_store_url("restored")

    saved = perfledger("backup", str(backup), "--db", original)
    assert saved.returncode == 0 and backup.is_file(), saved.stderr
    back = perfledger("restore", str(backup), "--db", restored)
    assert back.returncode == 0 and "row counts verified" in back.stdout, back.stderr

    queries = [(p.slug, "") for p in PAGES] + [("runs", f"run={run_id}")]
    before = exports(original, queries, capsysbinary)
    assert all(len(table) > 40 for table in before.values()), before
    assert exports(restored, queries, capsysbinary) == before
    assert store.counts(store.engine_from_url(restored)) == store.counts(engine)


def test_a_backup_never_overwrites_a_file_and_a_restore_needs_an_empty_store(seeded_db_file: Path,
                                                                             tmp_path: Path) -> None:
    taken = tmp_path / "taken.duckdb"
    taken.write_bytes(b"kept")
    refused = perfledger("backup", str(taken), "--db", f"duckdb:///{seeded_db_file}")
    assert refused.returncode == 2 and "exists" in refused.stderr and taken.read_bytes() == b"kept"
    again = perfledger("restore", str(seeded_db_file), "--db", f"duckdb:///{seeded_db_file}")
    assert again.returncode == 1 and "already holds rows" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["nowhere.duckdb", ""])
def test_a_restore_from_a_file_that_is_not_there_is_a_usage_error(missing: str, tmp_path: Path) -> None:
    done = perfledger("restore", str(tmp_path / missing), "--db", f"duckdb:///{tmp_path / 'new.duckdb'}")
    assert done.returncode == 2 and "is not a file" in done.stderr
