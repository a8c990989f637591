"""The write stamp: every write transaction, by any process, sets a stamp never set before; reads and failed writes
leave it; a store made before stamps has none until its schema is brought up to date.

Tests taking `seeded_store` run once per backend (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine

from ingest.pipeline import ingest_path
from perfledger import schema, store
from perfledger.errors import PerfledgerError
from perfledger.store.engine import connection
from tests.conftest import LOGS, ROOT

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_each_write_sets_a_new_stamp_and_reads_leave_it(seeded_store: Engine) -> None:
    first = store.write_stamp(seeded_store)
    store.results(seeded_store)
    store.runs(seeded_store)
    assert first is not None and store.write_stamp(seeded_store) == first
    run_id = ingest_path(seeded_store, MEGATRON).run_id
    after_ingest = store.write_stamp(seeded_store)
    assert run_id is not None
    store.delete_run(seeded_store, run_id)
    after_delete = store.write_stamp(seeded_store)
    assert len({first, after_ingest, after_delete}) == 3


def test_a_write_that_fails_leaves_the_stamp(seeded_store: Engine) -> None:
    before = store.write_stamp(seeded_store)
    with pytest.raises((PerfledgerError, RuntimeError)), connection(seeded_store, write=True) as conn:
        conn.execute(sa.delete(schema.result))
        raise RuntimeError("the write's caller fails half way")
    assert store.write_stamp(seeded_store) == before
    assert store.results(seeded_store).height > 0


def test_a_write_by_another_process_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    engine = store.engine_from_url(f"duckdb:///{db}")
    store.create_schema(engine)
    before = store.write_stamp(engine)
    done = subprocess.run([sys.executable, "-m", "ingest", str(MEGATRON)], cwd=ROOT, capture_output=True, text=True,
                          env={"PERFLEDGER_DB_URL": f"duckdb:///{db}", "PATH": ""}, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert store.write_stamp(engine) not in (None, before)


def test_a_store_made_before_stamps_has_none_until_its_schema_is_brought_up_to_date(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'old.duckdb'}")
    store.create_schema(engine)
    with engine.begin() as conn:  # as a store made before the stamp was
        conn.execute(sa.text("DROP TABLE store_stamp"))
    store.add_results(engine, [])
    assert store.write_stamp(engine) is None
    store.create_schema(engine)
    assert store.write_stamp(engine) is not None


def test_a_rebuilt_store_never_reads_as_the_store_it_replaced(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 's.duckdb'}")
    stamps = set()
    for _ in range(2):
        store.rebuild_store(engine, ROOT / "data")
        stamps.add(store.write_stamp(engine))
    assert len(stamps) == 2 and None not in stamps


def test_a_stamp_table_gone_since_it_was_last_read_reads_as_none_and_reads_go_on(tmp_path: Path) -> None:
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 's.duckdb'}")
    store.create_schema(engine)
    assert store.write_stamp(engine) is not None  # from now on its row is read without looking for the table
    with engine.begin() as conn:  # as between a rebuild's drop and its create
        conn.execute(sa.text("DROP TABLE store_stamp"))
    with store.reading():
        assert store.write_stamp(engine) is None
        assert store.results(engine).height == 0
    store.create_schema(engine)
    assert store.write_stamp(engine) is not None
