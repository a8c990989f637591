"""The store on a real DuckDB file and a real PostgreSQL: idempotent writes, all-or-nothing imports, plain errors.

Every test taking `seeded_store` or `store_engine` runs once per backend (tests/conftest.py).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as hs
from sqlalchemy import Connection, Engine

from ingest.pipeline import ingest_bytes, ingest_path
from ingest.spool import StepSpool, strictly_increasing
from perfledger import store
from perfledger.errors import ParseError, StoreBusy, StoreNotInitialised
from perfledger.records import PreparedRun
from perfledger.store import bulk
from perfledger.store.bulk import insert_parquet
from perfledger.store.engine import connection, lock_holder
from perfledger.vocabulary import LogFormat
from tests.conftest import DATA_DIR, LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_init_twice_changes_nothing(seeded_store: Engine) -> None:
    before = store.counts(seeded_store)
    report = store.init_store(seeded_store, DATA_DIR)
    assert not report.changed
    assert store.counts(seeded_store) == before


def test_same_file_ingested_twice_is_stored_once(seeded_store: Engine) -> None:
    first = ingest_path(seeded_store, MEGATRON)
    second = ingest_path(seeded_store, MEGATRON)
    assert first.created and not second.created
    assert second.run_id == first.run_id
    assert store.counts(seeded_store)["run"] == 1
    assert store.steps(seeded_store, first.run_id).height == first.steps


def test_gzip_and_plain_copies_of_a_log_are_one_run(seeded_store: Engine) -> None:
    import gzip

    raw = MEGATRON.read_bytes()
    plain = ingest_bytes(seeded_store, raw, "a.out")
    zipped = ingest_bytes(seeded_store, gzip.compress(raw), "a.out.gz")
    assert plain.created and not zipped.created and zipped.run_id == plain.run_id


def test_failed_import_leaves_no_partial_run(seeded_store: Engine) -> None:
    before = store.counts(seeded_store)
    good = MEGATRON.read_bytes()
    with pytest.raises(ParseError):
        ingest_bytes(seeded_store, good + b"\x1f\x8b garbage", "x.out", limit=len(good) // 2)
    assert store.counts(seeded_store) == before


def test_garbage_file_is_refused_naming_the_file(seeded_store: Engine) -> None:
    with pytest.raises(ParseError, match=r"^junk\.bin: not a log format perfledger reads \(known: mlperf"):
        ingest_bytes(seeded_store, bytes(range(256)) * 10, "junk.bin")
    assert store.counts(seeded_store)["run"] == 0


def test_run_steady_state_is_stored_with_its_rule(seeded_store: Engine) -> None:
    outcome = ingest_path(seeded_store, MEGATRON)
    row = store.run(seeded_store, outcome.run_id)
    assert row is not None and row.summary is not None
    assert row.summary["rule"]["warmup_fraction"] == 0.1
    listed = store.runs(seeded_store)
    assert listed["tokens_per_s_per_device"][0] == pytest.approx(row.summary["tokens_per_s_per_device"])
    measured = store.results(seeded_store, run_id=outcome.run_id)
    assert "tokens_per_s_per_device" in measured["metric"].to_list()


def test_delete_run_removes_steps_and_results(seeded_store: Engine) -> None:
    outcome = ingest_path(seeded_store, MEGATRON)
    assert store.delete_run(seeded_store, outcome.run_id)
    assert store.steps(seeded_store, outcome.run_id).height == 0
    assert store.results(seeded_store, run_id=outcome.run_id).height == 0


def test_writer_meeting_the_duckdb_lock_says_who_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "locked.duckdb"
    engine = store.engine_from_url(f"duckdb:///{db}")
    store.create_schema(engine)
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb,time; c=duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("PERFLEDGER_LOCK_WAIT_S", "1")
        with pytest.raises(StoreBusy, match=r"the store is busy, held by .*PID"):
            store.counts(engine)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert store.counts(engine)["run"] == 0  # released: usable again at once


def hold_outside_the_instance_cache(db: Path) -> duckdb.DuckDBPyConnection:
    """A connection of this process holding the DuckDB file, as one whose instance is being closed does."""
    holder = duckdb.connect()
    holder.execute(f"ATTACH '{db}' AS held")
    return holder


def test_a_connection_of_this_process_closing_the_file_is_waited_for(tmp_path: Path) -> None:
    """DuckDB attaches a file once per process ("Unique file handle conflict"): a query that met another session's
    last connection closing was shown as an error on the Runs page."""
    db = tmp_path / "shared.duckdb"
    engine = store.engine_from_url(f"duckdb:///{db}")
    store.create_schema(engine)
    holder = hold_outside_the_instance_cache(db)
    closing = threading.Timer(0.3, holder.close)
    closing.start()
    try:
        assert store.counts(engine)["run"] == 0
    finally:
        closing.join()


def test_a_connection_of_this_process_that_keeps_the_file_makes_the_store_busy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "shared.duckdb"
    engine = store.engine_from_url(f"duckdb:///{db}")
    store.create_schema(engine)
    monkeypatch.setenv("PERFLEDGER_LOCK_WAIT_S", "1")
    holder = hold_outside_the_instance_cache(db)
    try:
        with pytest.raises(StoreBusy, match="held by another connection of this process"):
            store.counts(engine)
    finally:
        holder.close()


def test_results_frame_has_schema_dtypes_on_an_empty_store(store_engine: Engine) -> None:
    frame = store.results(store_engine)
    assert frame.height == 0
    assert frame.schema["value"] == pl.Float64 and frame.schema["n_devices"] == pl.Int64


def test_ingested_at_is_passed_in_not_read_from_the_clock(seeded_store: Engine) -> None:
    from ingest.pipeline import ingest_stream

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with MEGATRON.open("rb") as fh:
        outcome = ingest_stream(seeded_store, fh, MEGATRON.name, now=when)
    row = store.run(seeded_store, outcome.run_id)
    assert row is not None and row.ingested_at == when and row.ingested_at.tzinfo == UTC


def test_an_out_of_memory_error_is_not_mistaken_for_the_file_lock() -> None:
    out_of_memory = "Out of Memory Error: failed to pin block of size 256.0 KiB (15.1 MiB/15.2 MiB used)"
    lock = 'IO Error: Could not set lock on file "/x.duckdb": Conflicting lock is held in /usr/bin/python3 (PID 7)'
    assert lock_holder(out_of_memory) is None
    assert lock_holder(lock) == "/usr/bin/python3 (PID 7)"


def test_has_data_is_false_without_tables_or_rows_and_true_once_anything_is_stored(
        store_url: str, seeded_store: Engine) -> None:
    engine = store.engine_from_url(store_url)
    assert store.has_data(engine) is False  # no tables yet: not an error
    store.create_schema(engine)
    assert store.has_data(engine) is False
    assert store.has_data(seeded_store) is True
    engine.dispose()


def test_a_missing_table_is_reported_as_a_store_never_initialised(store_url: str) -> None:
    with pytest.raises(StoreNotInitialised, match=r"python -m perfledger init"):
        store.results(store.engine_from_url(store_url))


def test_results_can_fetch_only_the_columns_a_page_reads(seeded_store: Engine) -> None:
    full = store.results(seeded_store, metric="tokens_per_s_per_device")
    narrow = store.results(seeded_store, metric="tokens_per_s_per_device", columns=["value", "id", "source_title"])
    assert narrow.columns == ["id", "value", "source_title"]  # the table's order, not the caller's
    assert narrow.equals(full.select("id", "value", "source_title"))
    with pytest.raises(ValueError, match="no result column named nope"):
        store.results(seeded_store, columns=["id", "nope"])


def test_catalog_rows_reads_two_rows_without_loading_pyarrow_in_a_lean_process(seeded_store: Engine) -> None:
    model, accelerator = store.catalog_rows(seeded_store, "llama2-70b", "not-an-accelerator")
    assert model is not None and model["id"] == "llama2-70b" and model["layers"] == 80
    assert accelerator is None
    assert store.catalog_rows(seeded_store, None, None) == (None, None)
    probe = ("import sys; from perfledger import process, store; process.lean_process(); "
             "e = store.engine_from_url(sys.argv[1]); store.catalog_rows(e, 'llama2-70b', 'h100-sxm'); "
             "print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, str(seeded_store.url.render_as_string(hide_password=False))],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@settings(deadline=None)
@given(hs.lists(hs.integers(-3, 9), min_size=1, max_size=12), hs.lists(hs.integers(-3, 9), max_size=12))
def test_steps_count_as_rising_only_when_each_is_above_every_one_before(first: list[int], then: list[int]) -> None:
    """Only then may DuckDB insert a run's steps in parallel (their stored order cannot show through ORDER BY)."""
    both = first + then
    rising = all(a < b for a, b in itertools.pairwise(both))
    ours = strictly_increasing(pl.Series(first), after=None) and (
        not then or strictly_increasing(pl.Series(then), after=first[-1]))
    assert ours == rising


def test_a_null_step_counts_as_not_rising() -> None:
    assert not strictly_increasing(pl.Series([1, None, 3]), after=None)


def insert_steps(tmp_path: Path, frames: list[pl.DataFrame], *, threads: int | None = None,
                 before: Callable[[Connection], None] = lambda conn: None,
                 then: Callable[[Connection], None] = lambda conn: None, seeded: Path | None = None) -> int:
    """The rows one DuckDB run insert stored from these step frames (missing columns NULL), spooled as the
    pipeline spools them, into a new store (or a copy of `seeded`); `before` runs first in the insert's
    transaction, `then` next."""
    if seeded is not None:
        shutil.copy(seeded, tmp_path / "steps.duckdb")
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 'steps.duckdb'}")
    store.create_schema(engine)
    spool = StepSpool()
    try:
        for frame in frames:
            spool.add(frame.with_columns(pl.lit(None, pl.Float64).alias(c) for c in store.STEP_COLUMNS
                                         if c not in frame.columns).select(store.STEP_COLUMNS))
        steps = spool.step_files()
        with connection(engine, write=True) as conn:
            if threads is not None:
                conn.exec_driver_sql(f"SET threads = {threads}")
            before(conn)
            insert_parquet(conn, store.schema.step, steps.files, store.STEP_COLUMNS,
                           order_shows=not steps.increasing, constants={"run_id": 1})
            if threads is not None:
                assert conn.exec_driver_sql("SELECT current_setting('threads')").scalar() == threads  # put back
            then(conn)
            return int(conn.exec_driver_sql("SELECT count(*) FROM step").scalar())
    finally:
        spool.close()
        engine.dispose()


def full_width_steps(n: int) -> list[pl.DataFrame]:
    """n steps with every step column filled, in 25,000-row frames."""
    rng = np.random.default_rng(0)
    floats = [c for c in store.STEP_COLUMNS if c != "step"]
    return [pl.DataFrame({"step": pl.int_range(first, first + 25_000, eager=True)}
                         | {c: rng.random(25_000) for c in floats}) for first in range(0, n, 25_000)]


def sparse_steps(n: int, frame_rows: int = 25_000) -> list[pl.DataFrame]:
    """n steps of a log that prints step time, tokens, loss and MFU only (nanoGPT), in frames of `frame_rows`."""
    return [pl.DataFrame({"step": pl.int_range(first, min(n, first + frame_rows), eager=True)}).with_columns(
        step_time_s=pl.col("step") * 1.0001, tokens=pl.lit(491_520.0), loss=pl.col("step").sin(),
        reported_mfu=pl.col("step").cos()) for first in range(0, n, frame_rows)]


def test_an_insert_stays_within_its_memory_on_a_store_set_to_many_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each DuckDB thread of an insert fills row groups of its own: left at a many-core machine's thread count,
    2.5 M steps ran out of the insert's 64 MB. Scaled down here: 500k steps under 24 MB, the store at 16 threads."""
    monkeypatch.setattr(bulk, "DUCKDB_INSERT_MEMORY", "24MB")
    assert insert_steps(tmp_path, sparse_steps(500_000), threads=16) == 500_000


def test_steps_inserted_after_their_run_row_stay_within_the_inserts_memory(
        tmp_path: Path, seeded_db_file: Path) -> None:
    """A run's row goes in first, in the same transaction: with the store's indexes that held enough memory for a
    parallel insert to fail ("failed to pin block"), which refused 10 M nanoGPT steps into an initialised store."""
    def run_row(conn: Connection) -> None:
        conn.execute(sa.insert(store.schema.run).values(
            id=10_000, content_sha256="cd" * 32, format="nanogpt", file_name="long.log", file_bytes=1,
            ingested_at=datetime.now(UTC), config="{}", warnings="[]", summary="{}", n_steps=2_500_000,
            skipped_lines=0))

    assert insert_steps(tmp_path, sparse_steps(2_500_000, 161_320), before=run_row, seeded=seeded_db_file) == 2_500_000 + \
        _stored_steps(seeded_db_file)


def _stored_steps(path: Path) -> int:
    engine = store.engine_from_url(f"duckdb:///{path}")
    try:
        return int(store.counts(engine)["step"])
    finally:
        engine.dispose()


@pytest.mark.parametrize("steps", [225_000, 1_000_000])
def test_the_costliest_insert_passes_with_a_tenth_of_its_memory_to_spare(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: int) -> None:
    """Every column filled: one thread needs 13 MB whatever the run's length (DuckDB 1.5.6). Fails when a DuckDB
    upgrade eats into DUCKDB_INSERT_MEMORY."""
    limit_mb = int(bulk.DUCKDB_INSERT_MEMORY.removesuffix("MB"))
    monkeypatch.setattr(bulk, "DUCKDB_INSERT_MEMORY", f"{limit_mb * 9 // 10}MB")
    assert insert_steps(tmp_path, full_width_steps(steps)) == steps


def test_queries_after_a_runs_insert_get_duckdbs_own_memory_limit_back(tmp_path: Path) -> None:
    """RESET memory_limit alone left DuckDB's buffer pool at the insert's limit for the rest of the process."""
    def list_of_20_million_integers(conn: Connection) -> None:  # about 160 MB
        assert conn.exec_driver_sql("SELECT len(list(range)) FROM range(20000000)").scalar() == 20_000_000

    assert insert_steps(tmp_path, full_width_steps(250_000), then=list_of_20_million_integers) == 250_000


def test_after_a_runs_insert_duckdb_no_longer_holds_the_blocks_it_wrote(tmp_path: Path) -> None:
    """They are in the file already; held, the run's summary (computed next) sat on the insert's limit of them."""
    held: list[int] = []
    insert_steps(tmp_path, full_width_steps(250_000), then=lambda conn: held.append(int(conn.exec_driver_sql(
        "SELECT sum(memory_usage_bytes) FROM duckdb_memory()").scalar())))
    assert held[0] <= int(bulk.DUCKDB_EVICT_MEMORY.removesuffix("MB")) * 2**20


def test_a_cli_process_exits_with_its_code_after_its_output_and_exit_handlers() -> None:
    """exit_process skips Python's module teardown (0.2-0.3 s), not what a command still had to say."""
    probe = ("import atexit, sys; atexit.register(print, 'handler ran'); from perfledger import process; "
             "print('result', end=''); sys.stderr.write('note'); process.exit_process(3)")
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a terminal-less run has it
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=buffered,
                         check=False)
    assert (out.returncode, out.stdout, out.stderr) == (3, "resulthandler ran\n", "note")


def test_a_cli_process_under_a_profiler_still_writes_its_profile(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text("from perfledger import process\nprocess.exit_process(0)\n")
    profile = tmp_path / "probe.prof"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), str(script)], check=True, timeout=60,
                   cwd=Path(__file__).resolve().parents[2])
    assert profile.stat().st_size > 0


def test_steps_logged_out_of_order_are_stored_by_step_with_repeats_in_the_logs_order(
        seeded_store: Engine) -> None:
    lines = [(5, 1.0), (6, 2.0), (2, 3.0), (6, 4.0), (1, 5.0)]  # (step, loss): back, and step 6 twice
    frames = [pl.DataFrame({"step": [s], "loss": [loss]}) for s, loss in lines]
    spool = StepSpool()
    for frame in frames:
        spool.add(frame.with_columns(pl.lit(None, pl.Float64).alias(c) for c in store.STEP_COLUMNS
                                     if c not in frame.columns).select(store.STEP_COLUMNS))
    prepared = PreparedRun(file_name="late.log", format=LogFormat("megatron"), content_sha256="ab" * 32,
                           file_bytes=1, config={}, summary={}, steps=spool.step_files(), release=spool.close)
    with prepared:
        saved = store.save_run(seeded_store, prepared)
    stored = store.steps(seeded_store, saved.run_id)
    assert list(zip(stored["step"], stored["loss"], strict=True)) == sorted(lines, key=lambda sl: sl[0])
    assert not spool.step_files().files or not prepared.steps.files[0].exists()


def test_results_filter_by_id_and_by_workload_in_the_query(seeded_store: Engine) -> None:
    every = store.results(seeded_store, columns=("id", "workload"))
    some = sorted(every["id"].to_list()[::7])
    assert store.results(seeded_store, ids=some, columns=("id",))["id"].to_list() == some
    assert store.results(seeded_store, ids=[], columns=("id",)).height == 0
    sft = store.results(seeded_store, workload="sft", columns=("id", "workload"))
    assert sft.height > 0 and sft.equals(every.filter(workload="sft"))
