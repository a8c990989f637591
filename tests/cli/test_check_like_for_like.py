"""`python -m perfledger check` compares like with like: a named run of another model, accelerator, devices,
precision or workload is refused in one sentence (exit 2) unless asked (--mixed, every difference named); a run with
nothing to compare says so instead of "pass"; an MLPerf result is judged on its time to train."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from perfledger import store
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
LLAMA = "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
QWEN = "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"
AMD = "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt"
MANGO = "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt"


def _env(url: str) -> dict[str, str]:
    return os.environ | {"PERFLEDGER_DB_URL": url}


def _ingest(url: str, name: str, *hints: str) -> int:
    done = run("ingest", str(LOGS / name), "--json", *hints, env=_env(url), check=True)
    return int(json.loads(done.stdout.splitlines()[0])["run_id"])


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, int]]:
    url = f"duckdb:///{tmp_path_factory.mktemp('like') / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    return url, {LLAMA: _ingest(url, LLAMA, "--model", "llama3-8b"), QWEN: _ingest(url, QWEN, "--model", "qwen2.5-32b"),
                 AMD: _ingest(url, AMD), MANGO: _ingest(url, MANGO)}


def check(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run("perfledger", "check", *args, env=_env(url))


def test_a_qwen_run_against_a_llama_run_exits_2_naming_the_model_and_devices(
        ledger: tuple[str, dict[str, int]]) -> None:
    """It printed "REGRESSION ... 82.55% worse" and exited 1."""
    url, runs = ledger
    done = check(url, str(runs[QWEN]), "--against", str(runs[LLAMA]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "REGRESSION" not in done.stdout and "Traceback" not in done.stderr
    assert "model qwen2.5-32b vs llama3-8b" in done.stderr and "devices 16 vs 8" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_asked_to_compare_anyway_every_difference_is_named_beside_the_result(
        ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    done = check(url, str(runs[QWEN]), "--against", str(runs[LLAMA]), "--mixed", "--json")
    report = json.loads(done.stdout)
    differences = report["runs"][0]["differences"]
    assert "model qwen2.5-32b vs llama3-8b" in differences and "devices 16 vs 8" in differences
    assert "not like for like, compared as asked" in check(url, str(runs[QWEN]), "--against", str(runs[LLAMA]),
                                                          "--mixed").stdout


def test_a_run_with_nothing_before_it_says_there_is_nothing_to_compare(ledger: tuple[str, dict[str, int]]) -> None:
    """It printed "run N (...): pass (...)"."""
    url, runs = ledger
    done = check(url, str(runs[LLAMA]))
    assert done.returncode == 0
    assert ": nothing to compare: no run of llama3-8b · b200 · 8 · fp8" in done.stdout and ": pass" not in done.stdout
    assert json.loads(check(url, str(runs[LLAMA]), "--json").stdout)["runs"][0]["compared"] is False


def test_an_mlperf_result_is_judged_on_its_time_to_train(ledger: tuple[str, dict[str, int]]) -> None:
    """MangoBoost's file counts 8 ranks and AMD's states no device count, so the pair is compared as asked (--mixed),
    the difference named, on time to train rather than on step time."""
    url, runs = ledger
    done = check(url, str(runs[MANGO]), "--against", str(runs[AMD]), "--mixed", "--json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)["runs"][0]
    assert "devices 8 vs unstated" in report["differences"]
    figures = report["figures"]
    assert [f["metric"] for f in figures] == ["time_to_train_s"]
    assert figures[0]["value"] == 1614.123 and figures[0]["baseline"] == 2035.848
