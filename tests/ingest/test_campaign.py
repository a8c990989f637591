"""A folder read as one campaign: an MLPerf submission scored as MLCommons scores it, a sweep whose jobs were
cancelled or timed out kept as outcomes with the line that says so, and a job table's rows as attempts."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ingest.campaign import plan_folder
from perfledger.campaigns import CampaignPlan
from perfledger.vocabulary import CampaignKind, OutcomeKind

CAMPAIGNS = Path(__file__).parents[1] / "fixtures" / "campaigns"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
SWEEP = CAMPAIGNS / "bigscience_gpt2_meg_base_sweep"
JOBS = CAMPAIGNS / "dgxc_llama31_405b_gb200_jobs"


def planned(folder: Path) -> CampaignPlan:
    plan = plan_folder(folder)
    plan.close()
    return plan


def mllog_time_to_train_s(path: Path) -> float:
    """run_stop.time_ms - run_start.time_ms of a successful run, read straight from its :::MLLOG events."""
    events = [json.loads(line.split(":::MLLOG", 1)[1]) for line in path.read_text().splitlines() if ":::MLLOG" in line]
    start = next(e["time_ms"] for e in events if e["key"] == "run_start")
    stop = next(e for e in events if e["key"] == "run_stop")
    assert stop["metadata"]["status"] == "success"
    return (stop["time_ms"] - start) / 1000.0


def scaling_factor(folder: Path) -> float:
    """The review's factor on the benchmark's score (scaling.json beside the result files)."""
    return float(json.loads(next(folder.glob("results/*/*/scaling.json")).read_text())["scaling_factor"])


def test_an_mlperf_submission_scores_as_mlcommons_olympic_mean_of_its_result_files_times_its_scaling() -> None:
    times = sorted(mllog_time_to_train_s(p) for p in sorted(MLPERF.glob("results/*/*/result_*.txt")))
    expected = sum(times[1:-1]) / (len(times) - 2)  # drop the fastest and the slowest, average the other eight
    plan = planned(MLPERF)
    assert plan.kind is CampaignKind.MLPERF and len(times) == 10
    assert plan.score.value == pytest.approx(expected * scaling_factor(MLPERF), rel=1e-9)
    assert plan.score.unit == "s" and "olympic" in plan.score.rule and "training_rules.adoc" in plan.score.rule
    assert "scaling factor 1.03472 of results/ESC_N8A-E12/llama2_70b_lora/scaling.json" in (plan.score.note or "")


def test_an_mlperf_folder_carries_its_system_description_and_submission_keys_into_each_run() -> None:
    plan = planned(MLPERF)
    assert plan.meta["submission"] == {"submission_org": "ASUSTeK", "submission_division": "closed",
                                       "submission_platform": "1xESC_N8A-E12", "submission_status": "onprem",
                                       "submission_benchmark": "llama2_70b_lora"}
    assert plan.meta["systems"]["systems/ESC_N8A-E12.json"]["accelerator_model_name"] == "NVIDIA H100-SXM5-80GB"
    configurations = {json.dumps(dict(a.configuration), sort_keys=True) for a in plan.attempts}
    assert len(configurations) == 1  # ten repeats of one configuration
    assert dict(plan.attempts[0].configuration).items() >= {"accelerator": "h100-sxm", "n_devices": 8}.items()


def test_every_job_of_a_sweep_is_an_attempt_and_its_failures_say_how_and_where() -> None:
    plan = planned(SWEEP)
    by_file = {a.file_name: a for a in plan.attempts}
    assert sorted(by_file) == sorted(p.name for p in SWEEP.glob("*.out"))  # no job is missing
    timed_out = by_file["meg_gpt2_base_n64_dp1_tp4_pp64-1809655.out"]
    assert (timed_out.kind, timed_out.line) == (OutcomeKind.TIMEOUT, 2398)
    assert "DUE TO TIME LIMIT" in (timed_out.reason or "")
    assert sum(a.kind is OutcomeKind.CANCELLED for a in plan.attempts) == 4
    assert plan.kind is CampaignKind.SWEEP and set(plan.meta["configs"]) == {p.name for p in SWEEP.glob("*.slurm")}
    assert plan.meta["configs"]["meg_gpt2_base_n64.slurm"]["sbatch.nodes"] == "64"


def test_a_sweep_score_is_its_best_configuration_median_with_the_rule_named() -> None:
    plan = planned(SWEEP)
    best = max((a for a in plan.attempts if a.metric == "tokens_per_s_per_device"), key=lambda a: a.value or 0)
    assert plan.score.value == pytest.approx(best.value)
    assert "highest median tokens_per_s_per_device" in plan.score.rule


def test_a_job_tables_rows_become_attempts_with_their_step_time() -> None:
    plan = planned(JOBS)
    assert plan.kind is CampaignKind.JOB_TABLE and len(plan.attempts) == 7
    first = plan.attempts[0]
    assert (first.file_name, first.kind, first.value) == ("jobs.sqlite3#384748", OutcomeKind.COMPLETED, 9.479)
    assert dict(first.configuration) == {"model": "llama3.1-405b", "precision": "bf16", "n_devices": 256,
                                         "workload": "pretrain_llama3.1"}


@pytest.mark.parametrize(("state", "parse", "kind"), [("OUT_OF_MEMORY", None, OutcomeKind.OUT_OF_MEMORY),
                                                      ("TIMEOUT", None, OutcomeKind.TIMEOUT),
                                                      ("COMPLETED", "invalid_grad_norm", OutcomeKind.NAN),
                                                      ("NODE_FAIL", None, OutcomeKind.FAILED)])
def test_a_failed_job_in_the_table_is_an_outcome_of_its_kind(tmp_path: Path, state: str, parse: str | None,
                                                            kind: OutcomeKind) -> None:
    folder = tmp_path / "jobs"
    shutil.copytree(JOBS, folder)
    with sqlite3.connect(folder / "jobs.sqlite3") as conn:
        conn.execute("UPDATE jobs SET slurm_state = ?, perf_parse_status = ? WHERE job_id = 384751", (state, parse))
    plan = planned(folder)
    failed = [a for a in plan.attempts if a.kind is not OutcomeKind.COMPLETED]
    assert [(a.file_name, a.kind) for a in failed] == [("jobs.sqlite3#384751", kind)]
    assert len(plan.attempts) == 7


def test_a_diverged_run_and_a_job_killed_before_its_first_step_are_outcomes_not_refusals(tmp_path: Path) -> None:
    folder = tmp_path / "sweep"
    folder.mkdir()
    shutil.copy(Path(__file__).parents[1] / "fixtures/logs/chenzihua_nanogpt_shakespeare_char_termux_nan.log", folder)
    log = (SWEEP / "meg_gpt2_base_n64_dp1_tp4_pp64-1809655.out").read_text().splitlines(keepends=True)
    before_steps = [line for line in log if " iteration " not in line]  # the same job had it died before step 1
    (folder / "n64_no_steps.out").write_text("".join(before_steps))
    plan = planned(folder)
    kinds = {a.file_name: a.kind for a in plan.attempts}
    assert kinds == {"chenzihua_nanogpt_shakespeare_char_termux_nan.log": OutcomeKind.NAN,
                     "n64_no_steps.out": OutcomeKind.TIMEOUT}
    assert plan.refusals == ()


def test_unreadable_files_are_refused_with_file_line_and_reason_and_the_rest_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "submission"
    shutil.copytree(MLPERF, folder)
    (folder / "results/ESC_N8A-E12/llama2_70b_lora/notes.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "systems/broken.json").write_text('{"system_name": "x",\n "oops"\n}')
    (folder / "README.md").write_text("# How these runs were made\n")  # notes are listed, not refused
    plan = planned(folder)
    assert plan.meta["documents"] == ["README.md"]
    assert len(plan.attempts) == 10
    binary, broken = sorted(plan.refusals)
    assert binary.startswith("results/ESC_N8A-E12/llama2_70b_lora/notes.bin: not a log format perfledger reads")
    assert broken.startswith("systems/broken.json:3: not a JSON object: Expecting ':' delimiter")


def test_a_run_that_did_not_converge_is_a_failed_outcome_dropped_as_the_slowest(tmp_path: Path) -> None:
    folder = tmp_path / "submission"
    shutil.copytree(MLPERF, folder)
    aborted = folder / "results/ESC_N8A-E12/llama2_70b_lora/result_2.txt"
    aborted.write_text(aborted.read_text().replace('"status": "success"', '"status": "aborted"'))
    converged = sorted(mllog_time_to_train_s(p) for p in sorted(folder.glob("results/*/*/result_*.txt"))
                       if p != aborted)
    plan = planned(folder)
    failed = [a for a in plan.attempts if a.kind is not OutcomeKind.COMPLETED]
    assert [(a.file_name, a.kind) for a in failed] == [(aborted.relative_to(folder).as_posix(), OutcomeKind.FAILED)]
    assert "aborted" in (failed[0].reason or "")
    expected = sum(converged[1:]) / 8 * scaling_factor(folder)  # the aborted run is the slowest
    assert plan.score.value == pytest.approx(expected, rel=1e-9)
