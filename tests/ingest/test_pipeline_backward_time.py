"""Time that goes backwards (a clock stepped back) is never stored as a measured duration: an MLPerf run_stop
before its run_start gives no time to train, and a negative or zero step time is kept out of the figures, each
with a warning."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes, ingest_path
from perfledger import store
from tests.conftest import LOGS
from tests.store.test_upgrade import megatron_log

AMD = LOGS / "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt"
RUN_START_MS, RUN_STOP_MS = 1755477365577, 1755479401425


def test_mlperf_run_stop_before_run_start_stores_no_time_to_train(empty_engine: Engine) -> None:
    stepped_back = RUN_START_MS - 1_441_863
    raw = AMD.read_bytes().replace(f'"time_ms": {RUN_STOP_MS}'.encode(), f'"time_ms": {stepped_back}'.encode())
    outcome = ingest_bytes(empty_engine, raw, "stepped_back.txt")
    assert outcome.run_id is not None
    stored = store.results(empty_engine, run_id=outcome.run_id)
    assert "time_to_train_s" not in stored["metric"].to_list()
    assert (stored["value"] > 0).all()
    run = store.run(empty_engine, outcome.run_id)
    assert run is not None and any("run_stop" in w and "before run_start" in w for w in run.warnings)


def test_a_negative_or_zero_step_time_is_stored_empty_with_a_warning(empty_engine: Engine, tmp_path: Path) -> None:
    path = megatron_log(tmp_path / "clock.log", list(range(1, 61)))
    text = path.read_text().splitlines()
    text[29] = text[29].replace("(ms): 1000.0", "(ms): -1441.9")
    text[30] = text[30].replace("(ms): 1000.0", "(ms): 0.0")
    path.write_text("\n".join(text) + "\n")
    outcome = ingest_path(empty_engine, path)
    assert outcome.run_id is not None
    steps = store.steps(empty_engine, outcome.run_id)
    assert steps.filter(steps["step"].is_in([30, 31]))["step_time_s"].null_count() == 2
    assert (steps["step_time_s"].drop_nulls() > 0).all()
    run = store.run(empty_engine, outcome.run_id)
    assert run is not None and any("2 step(s)" in w and "negative or zero" in w for w in run.warnings)
    assert run.summary is not None and run.summary["step_time_s_median"] == 1.0
