"""`python -m perfledger copy`: a whole ledger moves between DuckDB and PostgreSQL, ids and bytes kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from ingest.pipeline import ingest_path
from perfledger import cli, store
from perfledger.errors import StoreError
from tests.conftest import LOGS, ROOT
from tests.postgres_server import connect

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
SECOND_LOG = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"


def copy_cli(src: str, dst: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfledger", "copy", "--from", src, "--to", dst],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def exported(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> bytes:
    assert cli.main(list(args)) == 0
    return capsysbinary.readouterr().out


def ids(url: str, table: sa.Table) -> list[int]:
    with store.engine_from_url(url).connect() as conn:
        return list(conn.execute(sa.select(table.c.id).order_by(table.c.id)).scalars())


@pytest.mark.postgres
def test_duckdb_to_postgresql_and_back_keeps_rows_ids_and_export_bytes(
        seeded_db_file: Path, tmp_path: Path, pg_url: str,
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    shutil.copy(seeded_db_file, tmp_path / "first.duckdb")
    first = f"duckdb:///{tmp_path / 'first.duckdb'}"
    engine = store.engine_from_url(first)
    ingest_path(engine, MEGATRON)
    ingest_path(engine, LOGS / "claims_example.csv")
    pg = pg_url
    back = f"duckdb:///{tmp_path / 'back.duckdb'}"
    there, home = copy_cli(first, pg), copy_cli(pg, back)
    assert there.returncode == 0 and home.returncode == 0, there.stderr + home.stderr
    assert there.stdout.startswith("copied ") and "row counts verified" in there.stdout
    expected = store.counts(engine)
    assert store.counts(store.engine_from_url(pg)) == expected == store.counts(store.engine_from_url(back))
    assert ids(first, store.schema.run) == ids(pg, store.schema.run) == ids(back, store.schema.run)
    assert ids(first, store.schema.result) == ids(pg, store.schema.result) == ids(back, store.schema.result)
    for args in (("export", "sources", ""), ("audit", "--format", "csv"), ("export", "runs", "")):
        a, b, c = (exported(capsysbinary, *args, "--db", url) for url in (first, pg, back))
        assert a == b == c and len(a) > 100, args


def test_next_ingest_after_a_copy_gets_fresh_ids(seeded_db_file: Path, new_store_url: Callable[..., str]) -> None:
    src = store.engine_from_url(f"duckdb:///{seeded_db_file}")
    dst = store.engine_from_url(new_store_url("fresh"))  # no tables yet: copy creates them
    copied = store.copy_store(src, dst)
    assert copied == store.counts(src) and copied["result"] > 0
    before = ids(dst.url.render_as_string(hide_password=False), store.schema.result)
    outcome = ingest_path(dst, MEGATRON)
    assert outcome.created and outcome.run_id == 1
    after = store.results(dst, run_id=outcome.run_id)["id"].to_list()
    assert after and min(after) > max(before)
    assert ingest_path(dst, SECOND_LOG).run_id == 2


def test_copy_into_a_store_that_holds_rows_is_refused(seeded_db_file: Path, seeded_store: sa.Engine) -> None:
    before = store.counts(seeded_store)
    with pytest.raises(StoreError, match="already holds rows .*copy into an empty store"):
        store.copy_store(store.engine_from_url(f"duckdb:///{seeded_db_file}"), seeded_store)
    assert store.counts(seeded_store) == before


def test_copy_from_a_store_without_tables_is_refused(store_url: str, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="holds no perfledger tables"):
        store.copy_store(store.engine_from_url(store_url),
                         store.engine_from_url(f"duckdb:///{tmp_path / 'dst.duckdb'}"))


@pytest.mark.postgres
def test_row_count_mismatch_is_an_error_and_keeps_nothing(seeded_db_file: Path, pg_url: str) -> None:
    """A destination trigger silently drops some source rows: the copy must notice, say so, and roll back."""
    dst = store.engine_from_url(pg_url)
    store.create_schema(dst)
    with connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION drop_some() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                     "IF NEW.id LIKE 'a%' THEN RETURN NULL; END IF; RETURN NEW; END $$")
        conn.execute("CREATE TRIGGER drop_some BEFORE INSERT ON source FOR EACH ROW EXECUTE FUNCTION drop_some()")
    with pytest.raises(StoreError, match=r"row counts differ after the copy \(source: \d+ read, \d+ written\)"):
        store.copy_store(store.engine_from_url(f"duckdb:///{seeded_db_file}"), dst)
    assert set(store.counts(dst).values()) == {0}
