"""An MLPerf submission's runs are judged on their time to train: each against the runs of its configuration before
it, every figure of a run (its time to train too) in one configuration."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ingest.campaign import import_folder
from perfledger.views.check import check

MLPERF = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns" / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"


def test_a_submission_s_last_run_is_judged_on_time_to_train_against_the_runs_before_it(
        writable_engine: Engine) -> None:
    saved = import_folder(writable_engine, MLPERF).saved
    assert saved is not None
    report = check(writable_engine, str(saved.run_ids[-1]), window=20)
    (run,) = report.runs
    assert [f.metric for f in run.figures] == ["time_to_train_s"]  # not its step time
    assert run.figures[0].against == tuple(sorted(saved.run_ids[:-1]))  # the nine runs before it
