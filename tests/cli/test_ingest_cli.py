"""python -m ingest as a user runs it on several files: good ones stored, bad ones reported, exit code 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import LOGS, ROOT


def ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ingest", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_good_files_are_stored_and_bad_ones_reported_with_exit_1(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    out = ingest(str(LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"), str(garbage), "--db", db, "--json")
    assert out.returncode == 1
    stored = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(stored) == 1 and stored[0]["format"] == "torchtitan" and stored[0]["created"] is True
    assert {"file", "format", "run_id", "created", "steps", "skipped_lines", "warnings", "steady_state"} <= set(stored[0])
    assert set(stored[0]["steady_state"]) >= {"first_step", "last_step", "step_time_s_median",
                                              "tokens_per_s_per_device", "model_tflops_per_device", "mfu",
                                              "jitter_cv"}
    assert f"{garbage}: not a log format perfledger reads" in out.stderr
    again = ingest(str(LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"), "--db", db, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["created"] is False


def test_overrides_fill_what_the_log_does_not_state(tmp_path: Path) -> None:
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    subprocess.run([sys.executable, "-m", "perfledger", "init", "--db", db], cwd=ROOT, check=True,
                   capture_output=True)
    out = ingest(str(LOGS / "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log"), "--accelerator", "Gaudi 2",
                 "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["config"]["accelerator"] == "gaudi2"
    assert 0 < summary["steady_state"]["mfu"] < 1


def test_unknown_accelerator_is_a_usage_error(tmp_path: Path) -> None:
    out = ingest(str(LOGS / "claims_example.csv"), "--accelerator", "h9000", "--db", f"duckdb:///{tmp_path / 'x.duckdb'}")
    assert out.returncode == 2 and "unknown accelerator 'h9000'" in out.stderr
