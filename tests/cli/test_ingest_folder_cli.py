"""python -m ingest DIR: a folder imported as one campaign; --json ends with the campaign object; a folder with
unreadable files stores the rest, lists each refusal on stderr as FILE:LINE: reason and exits 1."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import run
from tests.conftest import ROOT

CAMPAIGNS = ROOT / "tests" / "fixtures" / "campaigns"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
SWEEP = CAMPAIGNS / "bigscience_gpt2_meg_base_sweep"


def ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return run("ingest", *args)


def campaign_of(stdout: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    *attempts, last = (json.loads(line) for line in stdout.splitlines())
    return attempts, last["campaign"]


def test_a_submission_folder_prints_its_runs_then_one_campaign_object_with_its_score(tmp_path: Path) -> None:
    out = ingest(str(MLPERF), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 0, out.stderr
    attempts, campaign = campaign_of(out.stdout)
    assert len(attempts) == 10 and {a["outcome"] for a in attempts} == {"completed"}
    assert campaign["id"] == 1 and campaign["kind"] == "mlperf" and campaign["created"] is True
    assert campaign["runs"] == [a["run_id"] for a in attempts] and campaign["outcomes"] == {"completed": 10}
    score = campaign["score"]
    assert score["unit"] == "s" and score["rule"].startswith("MLPerf olympic mean: 10 runs")
    scaling = json.loads(next(MLPERF.glob("results/*/*/scaling.json")).read_text())["scaling_factor"]
    assert score["value"] == pytest.approx(sum(sorted(a["value"] for a in attempts)[1:-1]) / 8 * scaling)
    [repeat] = campaign["repeats"]
    assert repeat["n"] == 10 and repeat["metric"] == "time_to_train_s"


def test_failed_configurations_of_a_sweep_are_outcomes_in_the_campaign(tmp_path: Path) -> None:
    out = ingest(str(SWEEP), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 0, out.stderr
    attempts, campaign = campaign_of(out.stdout)
    assert campaign["outcomes"] == {"cancelled": 4, "timeout": 1}
    timeout = next(a for a in attempts if a["outcome"] == "timeout")
    assert timeout["file"] == "meg_gpt2_base_n64_dp1_tp4_pp64-1809655.out" and timeout["line"] == 2398


def test_a_folder_with_unreadable_files_stores_the_rest_and_lists_each_refusal(tmp_path: Path) -> None:
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    (folder / "core.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "params.json").write_text('{"nodes": 4,\n "tp" 4}')
    out = ingest(str(folder), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 1
    _, campaign = campaign_of(out.stdout)
    assert len(campaign["runs"]) == 5 and len(campaign["refused"]) == 2
    refusals = sorted(out.stderr.splitlines())
    assert refusals[0].startswith("core.bin: not a log format perfledger reads")
    assert refusals[1].startswith("params.json:")
    assert refusals == sorted(campaign["refused"])


def test_text_output_names_the_outcomes_and_the_score_rule(tmp_path: Path) -> None:
    out = ingest(str(SWEEP), "--db", f"duckdb:///{tmp_path / 's.duckdb'}")
    assert out.returncode == 0
    assert "timeout (slurmstepd: error: *** STEP 1809655.0 ON r6i4n3 CANCELLED AT" in out.stdout
    assert "outcomes: 4 cancelled, 1 timeout" in out.stdout
    assert "score: 183.988 tokens/s/device — the highest median tokens_per_s_per_device" in out.stdout


def test_a_folder_whose_every_file_is_refused_stores_no_campaign(tmp_path: Path) -> None:
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "core.bin").write_bytes(bytes(range(256)) * 8)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    out = ingest(str(folder), "--db", db, "--json")
    assert out.returncode == 1 and out.stderr.startswith("core.bin: not a log format")
    _, campaign = campaign_of(out.stdout)
    assert campaign["id"] is None and campaign["runs"] == []
    listed = run("perfledger", "export", "campaigns", "", "--db", db, check=True)
    assert listed.stdout.splitlines()[1:] == []


def test_a_dry_run_reads_the_folder_and_stores_nothing(tmp_path: Path) -> None:
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    out = ingest(str(CAMPAIGNS / "dgxc_llama31_405b_gb200_jobs"), "--db", db, "--json", "--dry-run")
    assert out.returncode == 0
    attempts, campaign = campaign_of(out.stdout)
    assert campaign["dry_run"] is True and campaign["id"] is None and len(attempts) == 7
    again = ingest(str(CAMPAIGNS / "dgxc_llama31_405b_gb200_jobs"), "--db", db, "--json")
    assert campaign_of(again.stdout)[1]["created"] is True
