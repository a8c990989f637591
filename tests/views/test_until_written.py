"""Page tables remembered until the store is written to: asked again, a table is not read or computed again; after
any write (this process, another process, a delete) the next ask reads the store as it is.

Tests taking `seeded_store` run once per backend (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Engine

from ingest.pipeline import ingest_path
from perfledger import store, views
from tests.conftest import LOGS, ROOT

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
RUNS = views.RunsView()


def test_a_table_asked_again_is_neither_read_nor_computed_again(seeded_store: Engine) -> None:
    first = views.table("accelerators", views.AcceleratorView(), seeded_store)
    statements: list[str] = []
    sa.event.listen(seeded_store, "before_cursor_execute", lambda *a: statements.append(str(a[2]).lower()))
    again = views.table("accelerators", views.AcceleratorView(), seeded_store)
    assert again is first
    assert statements
    assert not any("from result" in s for s in statements)  # only the stamp is read


def test_each_state_is_its_own_answer(seeded_store: Engine) -> None:
    pretraining = views.table("accelerators", views.AcceleratorView(), seeded_store)
    every = views.table("accelerators", views.AcceleratorView(workload="all"), seeded_store)
    assert every.height > pretraining.height


def test_a_run_stored_and_deleted_shows_at_the_next_ask(seeded_store: Engine) -> None:
    before = views.table("runs", RUNS, seeded_store).height
    run_id = ingest_path(seeded_store, MEGATRON).run_id
    assert views.table("runs", RUNS, seeded_store).height == before + 1
    assert run_id is not None and store.delete_run(seeded_store, run_id)
    assert views.table("runs", RUNS, seeded_store).height == before


def test_a_run_stored_by_another_process_shows_at_the_next_ask(seeded_db_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    db.write_bytes(seeded_db_file.read_bytes())
    engine = store.engine_from_url(f"duckdb:///{db}")
    before = views.table("runs", RUNS, engine).height
    done = subprocess.run([sys.executable, "-m", "ingest", str(MEGATRON)], cwd=ROOT, capture_output=True, text=True,
                          env={"PERFLEDGER_DB_URL": f"duckdb:///{db}", "PATH": ""}, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert views.table("runs", RUNS, engine).height == before + 1


def test_a_store_without_a_stamp_is_read_afresh_each_time(seeded_db_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    db.write_bytes(seeded_db_file.read_bytes())
    engine = store.engine_from_url(f"duckdb:///{db}")
    with engine.begin() as conn:  # as a store made before stamps
        conn.execute(sa.text("DROP TABLE store_stamp"))
    ingest_path(engine, MEGATRON)
    before = views.table("runs", RUNS, engine).height
    with engine.begin() as conn:  # changed by hand: nothing to tell a reader
        conn.execute(sa.text("DELETE FROM run"))
    assert (before, views.table("runs", RUNS, engine).height) == (1, 0)
