"""Several processes at once: DuckDB's one-writer lock is waited for, PostgreSQL's unique key settles races."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perfledger import store
from perfledger.settings import load_settings
from tests.conftest import LOGS, ROOT
from tests.postgres_server import connect

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
OTHER = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"
BIG = LOGS / "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt"


def start_ingest(path: Path, url: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ingest", str(path), "--db", url, "--json"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ | env)


def finished(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def test_two_ingests_started_together_on_one_duckdb_file_both_succeed(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'shared.duckdb'}"
    procs = [start_ingest(path, url) for path in (MEGATRON, OTHER)]
    results = [finished(p) for p in procs]
    assert [rc for rc, _, _ in results] == [0, 0], [err for _, _, err in results]
    assert all(json.loads(out)["created"] for _, out, _ in results)
    assert store.counts(store.engine_from_url(url))["run"] == 2


def test_ingest_that_cannot_get_the_duckdb_lock_says_plainly_who_holds_it(tmp_path: Path) -> None:
    db = tmp_path / "held.duckdb"
    store.create_schema(store.engine_from_url(f"duckdb:///{db}"))
    probe = f"import duckdb,time; c=duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        rc, _, err = finished(start_ingest(MEGATRON, f"duckdb:///{db}", PERFLEDGER_LOCK_WAIT_S="1"))
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert rc == 1
    waiting, error = err.splitlines()
    assert waiting.startswith("waiting for the store: held by ") and f"(PID {holder.pid})" in waiting, waiting
    assert error.startswith("error: the store is busy, held by ") and f"PID {holder.pid}" in error
    assert "Traceback" not in err
    assert waited < 15  # the bounded retry (1 s) plus interpreter start, not a hang


def test_six_ingests_started_together_on_one_duckdb_file_queue_and_all_store_their_run(tmp_path: Path) -> None:
    """Each holds the file longer than a reader's retry: they wait for their turn, say so, and a reader is served
    between them. Before the queue, half of 8 such ingests failed "busy" and a reader waited 13 s."""
    from bench.inputs import build

    logs = [tmp_path / f"run{i}.log" for i in range(6)]
    for i, log in enumerate(logs):
        build("megatron", 600_000 + 200_000 * i, log)  # whole copies of the body: sizes far apart differ
    url = f"duckdb:///{tmp_path / 'queue.duckdb'}"
    engine = store.engine_from_url(url)
    store.create_schema(engine)
    procs = [start_ingest(log, url) for log in logs]
    waits = []
    while any(p.poll() is None for p in procs):
        started = time.monotonic()
        store.runs(engine)
        waits.append(time.monotonic() - started)
        time.sleep(0.05)
    results = [finished(p) for p in procs]
    assert [rc for rc, _, _ in results] == [0] * 6, [err for _, _, err in results]
    assert all(json.loads(out)["created"] for _, out, _ in results)
    assert store.counts(engine)["run"] == 6
    told = [err for _, _, err in results if "waiting for the store: held by " in err]
    assert told and all(err.count("waiting for the store") == 1 for err in told), told
    assert max(waits) < load_settings().lock_wait_s
    print(f"{len(told)} of 6 waited their turn; {len(waits)} reads meanwhile, longest {max(waits):.2f} s")


@pytest.mark.postgres
def test_four_processes_ingesting_the_same_file_into_postgresql_store_one_run(pg_url: str) -> None:
    url = pg_url
    store.create_schema(store.engine_from_url(url))
    results = [finished(p) for p in [start_ingest(MEGATRON, url) for _ in range(4)]]
    assert [rc for rc, _, _ in results] == [0] * 4, [err for _, _, err in results]
    outcomes = [json.loads(out) for _, out, _ in results]
    assert sorted(o["created"] for o in outcomes) == [False, False, False, True]
    assert len({o["run_id"] for o in outcomes}) == 1
    engine = store.engine_from_url(url)
    counts = store.counts(engine)
    assert counts["run"] == 1 and counts["step"] == outcomes[0]["steps"]  # the losers' steps rolled back


def test_dashboard_keeps_reading_while_the_cli_writes(store_url: str, backend: str) -> None:
    """A reader loop like the dashboard's reruns: never an error, each read bounded by the lock wait."""
    engine = store.engine_from_url(store_url)
    store.create_schema(engine)
    writer = start_ingest(BIG, store_url)
    waits: list[float] = []
    seen: set[int] = set()
    while writer.poll() is None:
        started = time.monotonic()
        seen.add(store.runs(engine).height)
        waits.append(time.monotonic() - started)
        time.sleep(0.02)  # a person's rerun rate is far lower; this only leaves the writer room
    rc, _, err = finished(writer)
    assert rc == 0, err
    assert store.runs(engine).height == 1 and seen <= {0, 1}
    assert len(waits) >= 3 and max(waits) < load_settings().lock_wait_s
    print(f"{backend}: {len(waits)} reads while writing, longest {max(waits):.3f} s")


@pytest.mark.postgres
def test_a_source_another_writer_commits_meanwhile_does_not_fail_the_ingest(pg_url: str, tmp_path: Path) -> None:
    """Two claims files citing one new source, stored at the same moment: the second waits, then succeeds."""
    claims = tmp_path / "claims.csv"
    claims.write_text("metric,value,unit,source_id,source_title,model,accelerator,n_devices,precision\n"
                      "tokens_per_s_per_device,1000,tokens/s/device,shared_new_src,A talk,llama2-7b,h100-sxm,8,bf16\n")
    engine = store.engine_from_url(pg_url)
    store.create_schema(engine)
    outcome: list[object] = []
    with connect(pg_url) as other:  # another writer: its transaction stays open until commit() below
        other.execute("INSERT INTO source (id, kind, title) VALUES ('shared_new_src', 'talk', 'A talk')")
        worker = threading.Thread(target=lambda: outcome.append(_ingest_or_error(engine, claims)))
        worker.start()
        time.sleep(0.5)  # the ingest now waits on the source's primary key
        other.commit()
    worker.join(timeout=60)
    assert outcome and not isinstance(outcome[0], Exception), outcome
    assert store.counts(engine)["run"] == 1 and store.counts(engine)["source"] == 1


def _ingest_or_error(engine: object, path: Path) -> object:
    from ingest.pipeline import ingest_path

    try:
        return ingest_path(engine, path)  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - handed to the test thread to report
        return exc
