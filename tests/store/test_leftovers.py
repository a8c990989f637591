"""A killed writer leaves no part of a run, and what it did leave (orphan rows, spool folders) goes on the next
write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa

from perfledger import schema, store
from perfledger.spools import spool_folder
from perfledger.store.leftovers import ids_not_stored, remove_dead_spools, remove_orphan_rows
from tests.conftest import ROOT

BIG_RUN_STEPS = 150_000  # more than a row group: DuckDB writes them to the file before the commit

# Stores a run of BIG_RUN_STEPS steps, one result and 200 kB of warnings (the run row is logged last, over
# several of the WAL's writes); prints "ready" (and its spool folder) just before saving.
_SAVE_BIG_RUN = f"""
import sys
import numpy as np, polars as pl
from ingest.spool import StepSpool
from perfledger import schema, store
from perfledger.records import PreparedRun, ResultRecord, STEP_SCHEMA
from perfledger.vocabulary import LogFormat
engine = store.engine_from_url(sys.argv[1])
rng = np.random.default_rng(1)
spool = StepSpool()
for start in range(0, {BIG_RUN_STEPS}, 50_000):  # a few random columns, the rest null
    spool.add(pl.DataFrame({{c: rng.random(50_000) for c in ("step_time_s", "loss", "lr")}})
              .with_columns(step=pl.int_range(start + 1, start + 50_001), **{{c: pl.lit(None, pl.Float64) for c in STEP_SCHEMA
                  if c not in ("step", "step_time_s", "loss", "lr")}}).cast(STEP_SCHEMA).select(list(STEP_SCHEMA)))
prepared = PreparedRun(file_name="big.log", format=LogFormat("megatron"), content_sha256="cd" * 32, file_bytes=1,
                       config={{}}, summary={{}}, steps=spool.step_files(), release=spool.close,
                       warnings=tuple(f"warning {{i}}: " + "x" * 1000 for i in range(200)),
                       results=(ResultRecord(metric="step_time_s", value=1.0, unit="s"),))
store.create_schema(engine)
print("ready", spool.step_files().files[0].parent, flush=True)
store.save_run(engine, prepared)
print("saved", flush=True)
"""


def _raw_counts(db: Path) -> tuple[int, int, int, int]:
    """(runs, steps, steps without a run, results without a run), read by DuckDB itself, before any sweep."""
    with duckdb.connect(str(db)) as con:
        row = con.execute("SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM step), "
                          "(SELECT count(*) FROM step WHERE run_id NOT IN (SELECT id FROM run)), "
                          "(SELECT count(*) FROM result WHERE run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM run))"
                          ).fetchone()
    assert row is not None
    return row[0], row[1], row[2], row[3]


def _kill_during_save(db: Path, delay: float | None) -> tuple[Path, bool]:
    """Start the big save and kill it `delay` s after it is ready (None: as soon as DuckDB's WAL shows); its spool
    folder, and whether the kill came before it ended."""
    proc = subprocess.Popen([sys.executable, "-c", _SAVE_BIG_RUN, f"duckdb:///{db}"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = proc.stdout.readline().split()
    assert ready[0] == "ready", ready
    deadline = time.monotonic() + (delay if delay is not None else 60)
    wal = db.with_name(db.name + ".wal")
    while proc.poll() is None and time.monotonic() < deadline:
        if delay is None and wal.exists() and wal.stat().st_size > 16384:  # past the steps, into the run row
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    return Path(ready[1]), proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("delay", [None, 0.05, 0.4])
def test_a_duckdb_writer_killed_while_saving_a_big_run_leaves_all_of_it_or_nothing(tmp_path: Path,
                                                                                  delay: float | None) -> None:
    """Before commits went by checkpoint, a kill while DuckDB wrote its WAL left all its steps and no run."""
    db = tmp_path / "killed.duckdb"
    spool, killed = _kill_during_save(db, delay)
    runs, steps, orphan_steps, orphan_results = _raw_counts(db)
    assert (orphan_steps, orphan_results) == (0, 0)
    assert (runs, steps) in {(0, 0), (1, BIG_RUN_STEPS)}
    assert killed or not spool.exists()  # a process that ends removes it; one killed may have (its save done) or not
    store.create_schema(store.engine_from_url(f"duckdb:///{db}"))
    assert not spool.exists()


def test_rows_without_a_run_are_removed_on_the_first_write(tmp_path: Path) -> None:
    db = tmp_path / "orphans.duckdb"
    plain = sa.create_engine(f"duckdb:///{db}")  # not through the store: its first write is to come
    with plain.begin() as conn:
        schema.metadata.create_all(conn)
    plain.dispose()
    with duckdb.connect(str(db)) as con:  # what a kill left in a store written before this release
        con.execute("INSERT INTO step (run_id, step) SELECT 7, i FROM range(1000) t(i)")
        con.execute("INSERT INTO result (id, row_key, metric, value, unit, evidence, run_id) "
                    "VALUES (1, 'k1', 'm', 1, 'u', 'measured', 7), (2, 'k2', 'm', 1, 'u', 'reported', NULL)")
    engine = store.engine_from_url(f"duckdb:///{db}")
    assert store.counts(engine)["step"] == 1000  # reading removes nothing
    store.create_schema(engine)
    assert _raw_counts(db)[1:] == (0, 0, 0)
    assert store.counts(engine)["result"] == 1  # a result of no run (a claim) stays


def test_spool_folders_of_dead_processes_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = tmp_path / f"perfledger-steps-{int(gone.stdout)}-abc"
    live = tmp_path / f"perfledger-steps-{os.getppid()}-abc"
    other = tmp_path / "perfledger-steps-abc"  # not named by a process: never guessed at
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "00000000.parquet").write_bytes(b"x")
    assert remove_dead_spools(tmp_path) == [dead]
    assert live.exists() and other.exists() and not dead.exists()


def test_a_spool_folder_is_named_after_its_process() -> None:
    with spool_folder("steps") as name:
        assert Path(name).name.startswith(f"perfledger-steps-{os.getpid()}-")
        assert Path(name).parent == Path(tempfile.gettempdir())
        remove_dead_spools()
        assert Path(name).exists()


STEPS_PER_RUN = 150_000  # more than a row group each: DuckDB keeps a min and max of run_id per row group


def _store_with_orphans_in_a_gap_and_past_the_end(db: Path) -> None:
    """Runs 1-6 with their steps and run 3 deleted but for its steps (a gap), and steps of a run 7 never stored."""
    plain = sa.create_engine(f"duckdb:///{db}")
    with plain.begin() as conn:
        schema.metadata.create_all(conn)
    plain.dispose()
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO run (id, content_sha256, format, file_name, ingested_at, config, warnings, n_steps, "
                    "skipped_lines) SELECT i, md5(i::VARCHAR), 'megatron', 'r.log', now(), '{}', '[]', "
                    f"{STEPS_PER_RUN}, 0 FROM range(1, 7) t(i) WHERE i <> 3")
        con.execute(f"INSERT INTO step (run_id, step) SELECT i // {STEPS_PER_RUN} + 1, i "
                    f"FROM range({7 * STEPS_PER_RUN}) t(i)")
        con.execute("INSERT INTO result (id, row_key, metric, value, unit, evidence, run_id) VALUES "
                    "(1, 'k1', 'm', 1, 'u', 'measured', 3), (2, 'k2', 'm', 1, 'u', 'measured', 2), "
                    "(3, 'k3', 'm', 1, 'u', 'measured', 7), (4, 'k4', 'm', 1, 'u', 'reported', NULL)")


def test_the_sweep_removes_orphans_in_a_gap_and_past_the_last_run(tmp_path: Path) -> None:
    db = tmp_path / "gaps.duckdb"
    _store_with_orphans_in_a_gap_and_past_the_end(db)
    engine = store.engine_from_url(f"duckdb:///{db}")
    with engine.begin() as conn:
        assert remove_orphan_rows(conn) == {"step": 2 * STEPS_PER_RUN, "result": 2}
    assert _raw_counts(db) == (5, 5 * STEPS_PER_RUN, 0, 0)
    assert ids_not_stored([1, 2, 4, 5, 6]) == [(None, 0), (3, 3), (7, None)]
    assert ids_not_stored([]) == [(None, None)]


def test_the_sweep_reads_the_row_groups_of_missing_runs_not_every_step(tmp_path: Path) -> None:
    db = tmp_path / "gaps.duckdb"
    _store_with_orphans_in_a_gap_and_past_the_end(db)
    profile = tmp_path / "profile.json"
    scanned: list[int] = []

    def count_scanned(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if "step" in statement and profile.exists():
            scanned.append(int(json.loads(profile.read_text()).get("cumulative_rows_scanned", 0)))

    plain = sa.create_engine(f"duckdb:///{db}")
    with plain.begin() as conn:
        conn.exec_driver_sql("PRAGMA enable_profiling = 'json'")
        conn.exec_driver_sql(f"PRAGMA profiling_output = '{profile}'")
        conn.exec_driver_sql("""SET custom_profiling_settings = '{"CUMULATIVE_ROWS_SCANNED": "true"}'""")
        sa.event.listen(conn, "after_cursor_execute", count_scanned)
        remove_orphan_rows(conn)
    plain.dispose()
    assert scanned
    # the orphans' own 300,000 rows and the row groups they share with neighbours; before: all 1,050,000 steps
    assert sum(scanned) < 4 * STEPS_PER_RUN
