"""`python -m perfledger compare` on real logs ingested through `python -m ingest` into a store loaded from data/:
the NeMo Llama 3 8B run on 8 B200 against NVIDIA's published figure for that setup (its ratio, the row named and why,
the differing fields, a gap whose parts add up to the ratio, TFLOP/s under one count, goodput adding up to the wall
clock); each comparison that cannot be made said in one sentence."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from perfledger import store
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
NEMO = "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
QWEN = "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"
TITAN = "qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log"
MLPERF = "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt"


def _env(url: str) -> dict[str, str]:
    return os.environ | {"PERFLEDGER_DB_URL": url}


def _ingest(url: str, name: str, *hints: str) -> int:
    done = run("ingest", str(LOGS / name), "--json", *hints, env=_env(url), check=True)
    return int(json.loads(done.stdout.splitlines()[0])["run_id"])


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, int]]:
    url = f"duckdb:///{tmp_path_factory.mktemp('compare') / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    runs = {NEMO: _ingest(url, NEMO, "--model", "llama3-8b"), QWEN: _ingest(url, QWEN, "--model", "qwen2.5-32b"),
            TITAN: _ingest(url, TITAN), MLPERF: _ingest(url, MLPERF)}
    return url, runs


def compare(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run("perfledger", "compare", *args, env=_env(url))


def verdict(url: str, run: int) -> dict[str, Any]:
    done = compare(url, str(run), "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_nemo_b200_run_is_98_9_percent_of_nvidia_s_published_figure_for_its_setup(
        ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    v = verdict(url, runs[NEMO])
    head = v["headline"]
    assert round(head["tokens_per_s_per_device"]) == 30299
    assert round(head["model_tflops_per_device"], 1) == 1754.7 and round(head["mfu"], 4) == 0.3899
    assert head["peak_used"] == "4500 TFLOP/s dense fp8 per GPU (b200)"
    published = v["published"]
    assert (published["source_id"], published["value"], published["metric"]) == (
        "mbridge_perf_archive", 30624.0, "tokens_per_s_per_device")
    assert round(published["ratio"], 4) == 0.9894
    assert "newest framework version" in published["why"] and "NeMo container 25.11" in published["why"]
    assert v["sentence"].startswith("98.9% of the published 30,624 tokens/s per device")


def test_every_comparable_row_is_listed_with_its_source_version_and_audit_verdict(
        ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    rows = verdict(url, runs[NEMO])["comparable"]
    assert {(r["source_id"], r["framework_version"], r["value"]) for r in rows} == {
        ("mbridge_perf_archive", "NeMo container 25.11", 30624.0), ("mbridge_perf_archive", "NeMo container 25.11", 29521.0),
        ("nemo_docs_2502", "NeMo 25.02 container", 26006.0)}
    assert all(r["audit_verdict"] for r in rows) and sum(r["chosen"] for r in rows) == 1


def test_the_differing_fields_and_a_gap_that_adds_up_to_the_ratio(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    v = verdict(url, runs[NEMO])
    fields = {d["field"]: (d["run"], d["published"]) for d in v["differences"]}
    assert fields["framework_version"] == (None, "NeMo container 25.11")
    assert fields["precision_recipe"] == (None, "FP8-CS")
    assert "n_devices" not in fields and "global_batch" not in fields and "grad_accum" not in fields  # 128 / (2 x 8)
    gap = v["gap"]
    assert abs(1 + sum(p["share"] for p in gap["parts"]) + gap["unexplained"] - v["published"]["ratio"]) < 1e-9


def test_tflops_are_set_side_by_side_only_under_the_count_nvidia_used(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    side = verdict(url, runs[NEMO])["tflops"]
    assert side["convention"] == "causal" and side["published"] == 1576.0
    assert round(side["ratio"], 3) == 0.990  # not "1,754.7 beats 1,576 by 11%"


def test_goodput_parts_add_up_to_the_wall_clock_the_log_printed(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    flow = verdict(url, runs[NEMO])["goodput"]
    parts = sum(v for k, v in flow.items() if k.endswith("_s") and k != "wall_s")
    assert abs(parts - flow["wall_s"]) <= 0.01 * flow["wall_s"]
    assert flow["wall_s"] == 248.0  # 2025-06-11 23:59:27 to 2025-06-12 00:03:35, the log's printed span
    assert flow["productive_s"] > 0 and flow["warmup_s"] > 0 and set(flow["marked_by"]) == {
        k for k in flow if k.endswith("_s") and k != "wall_s"}


def test_the_text_verdict_names_the_row_and_the_peak(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    done = compare(url, str(runs[NEMO]))
    assert done.returncode == 0
    assert "98.9% of the published 30,624" in done.stdout and "MFU against 4500 TFLOP/s dense fp8" in done.stdout


@pytest.mark.parametrize(("name", "said"), [
    (QWEN, "no published tokens/s per device for qwen2.5-32b on b200 at bf16 (pretrain) is stored in the ledger"),
    (MLPERF, "an MLPerf result is judged on its time to train"),
])
def test_a_comparison_that_cannot_be_made_says_why_in_one_sentence(ledger: tuple[str, dict[str, int]], name: str,
                                                                    said: str) -> None:
    url, runs = ledger
    v = verdict(url, runs[name])
    assert v["published"] is None and said in v["reason"] and v["comparable"] == []


def test_torchtitan_s_mfu_against_its_a100_fallback_peak_is_named_so(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    head = verdict(url, runs[TITAN])["headline"]
    assert round(head["tokens_per_s_per_device"]) == 3219
    assert head["log_mfu"] == 0.064 and "fallback peak (A100), not this device's" in head["log_peak"]
    assert head["mfu"] is None


def test_against_a_run_of_another_setup_exits_2_naming_what_differs(ledger: tuple[str, dict[str, int]]) -> None:
    url, runs = ledger
    done = compare(url, str(runs[QWEN]), "--against", str(runs[NEMO]))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "model qwen2.5-32b vs llama3-8b" in done.stderr and "devices 16 vs 8" in done.stderr
