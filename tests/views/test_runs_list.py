"""The run list holds runs only (a claims CSV import is listed on Sources, not as a run with 0 steps), and an MLPerf
result, which has no steps, is listed with its time to train instead of a dash in every column."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from ingest import pipeline
from perfledger import store
from perfledger.views.runs import runs_list
from tests.conftest import LOGS

NO_TIMES = pl.DataFrame(schema={"run_id": pl.Int64(), "value": pl.Float64()})


def test_a_claims_csv_import_is_not_a_run() -> None:
    frame = pl.DataFrame({"id": [2, 1], "format": ["claims_csv", "megatron"], "n_steps": [0, 120]})
    assert runs_list(frame, NO_TIMES)["id"].to_list() == [1]


def test_an_mlperf_result_is_listed_with_its_time_to_train(store_engine: Engine) -> None:
    mlperf = pipeline.ingest_path(store_engine, LOGS / "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt").run_id
    megatron = pipeline.ingest_path(store_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out").run_id
    times = store.results(store_engine, metric="time_to_train_s", columns=("run_id", "value")).drop_nulls("run_id")
    listed = {r["id"]: r for r in runs_list(store.runs(store_engine), times).iter_rows(named=True)}
    assert listed[mlperf]["time_to_train_s"] == 3147.895  # run_stop - run_start, as the file gives it
    assert listed[megatron]["time_to_train_s"] is None and listed[megatron]["tokens_per_s_per_device"] is not None
