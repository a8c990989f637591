"""A folder holding several submitters' and systems' MLPerf results (a whole round) imported in one pass: one
campaign per submitter's system and benchmark, each scored as MLCommons' result_summarizer scores it, its broken
files refused by name and line while every good one is stored, and no campaign half-stored."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ingest.campaign import import_round, plan_round
from perfledger import store
from perfledger.campaigns import CampaignSaved
from tests.conftest import DATA_DIR, LOGS, ROOT

CAMPAIGNS = ROOT / "tests" / "fixtures" / "campaigns"
ASUSTEK = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
AMD = LOGS / "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt"
MANGOBOOST = LOGS / "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt"


def bench_round() -> ModuleType:
    """bench/round.py: the round builder and result_summarizer's scores (the benchmark's own code)."""
    spec = importlib.util.spec_from_file_location("bench_round", ROOT / "bench" / "round.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_round"] = module
    spec.loader.exec_module(module)
    return module


def ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ingest", *args], check=False, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def campaigns_of(stdout: str) -> list[dict[str, Any]]:
    return [line["campaign"] for line in map(json.loads, stdout.splitlines()) if "campaign" in line]


def test_one_amd_and_one_mangoboost_mi300x_result_in_a_folder_are_two_campaigns(tmp_path: Path) -> None:
    folder = tmp_path / "mi300x"
    folder.mkdir()
    shutil.copy(AMD, folder)
    shutil.copy(MANGOBOOST, folder)
    out = ingest(str(folder), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 0, out.stderr
    found = {c["name"]: c for c in campaigns_of(out.stdout)}
    assert set(found) == {"AMD 1xMI300X llama2_70b_lora", "MangoBoost 1xMI300X llama2_70b_lora"}  # was one: "AMD | MangoBoost"
    for campaign in found.values():
        assert campaign["kind"] == "mlperf" and len(campaign["runs"]) == 1
        assert campaign["score"]["value"] is None  # one result file: no score of a system of ten runs
        [repeat] = campaign["repeats"]
        assert repeat["n"] == 1  # never one configuration of the two submitters' systems
    submitters = {json.loads(r["configuration"])["submitter"] for c in found.values() for r in c["repeats"]}
    assert submitters == {"AMD", "MangoBoost"}


def real_round(folder: Path, broken_at: tuple[int, ...] = ()) -> Any:
    """The ASUSTeK submission as published, and systems copied from other real submissions (bench/round.py)."""
    module = bench_round()
    shutil.copytree(ASUSTEK, folder / "ASUSTeK")
    picked = tuple(s for s in module.SUBMISSIONS if s.org in ("AMD", "MangoBoost", "NVIDIA")
                   and "MI355X" not in s.accelerator)
    return module.build_round(folder, n_files=43, submissions=picked, broken_at=broken_at)


def test_a_rounds_scores_equal_result_summarizers_for_every_complete_benchmark(tmp_path: Path) -> None:
    folder = tmp_path / "round"
    real_round(folder)
    db = tmp_path / "round.duckdb"
    shutil.copy(store_seeded(tmp_path), db)
    out = ingest(str(folder), "--db", f"duckdb:///{db}")
    assert out.returncode == 0, out.stderr
    module = bench_round()
    ours = module.our_scores(f"duckdb:///{db}")
    _, theirs = module.summarizer_scores(folder)
    assert len(theirs) == 6 and set(ours) == set(theirs)  # ASUSTeK's own, and five systems copied from others
    for key, minutes in theirs.items():
        assert ours[key] == pytest.approx(minutes, rel=1e-12), key


def store_seeded(tmp_path: Path) -> Path:
    path = tmp_path / "seeded.duckdb"
    store.init_store(store.engine_from_url(f"duckdb:///{path}"), DATA_DIR)
    return path


def test_broken_files_in_a_round_are_refused_by_name_and_every_good_file_is_stored(tmp_path: Path) -> None:
    folder = tmp_path / "round"
    built = real_round(folder, broken_at=(1, 2, 3))  # a truncated copy, bytes that are no log, an empty file
    shutil.copy(LOGS / "bigscience_meg_gpt2_perf_n16_v100.out", folder / "NVIDIA" / "results" / "notes.log")
    out = ingest(str(folder), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 1
    truncated, junk, empty = built.broken
    refused = out.stderr.splitlines()
    assert len(refused) == 2
    assert next(r for r in refused if r.startswith(junk)).startswith(f"{junk}: not a log format perfledger reads")
    assert f"{empty}: the file is empty" in refused
    found = campaigns_of(out.stdout)
    assert sum(len(c["runs"]) for c in found) == built.files - 2 + 10 + 1  # the good files, ASUSTeK's, the foreign
    cut = next(c for c in found if c["meta"].get("results_folder") == str(Path(truncated).parent))
    assert cut["outcomes"] == {"completed": 10, "failed": 1}  # the truncated run: a failed attempt, not a refusal
    own = next(c for c in found if c["name"] == "round")
    assert own["kind"] == "folder" and len(own["runs"]) == 1


def test_a_campaign_that_cannot_be_stored_leaves_nothing_of_itself_and_the_others_stored(tmp_path: Path) -> None:
    folder = tmp_path / "round"
    real_round(folder)
    engine = store.engine_from_url(f"duckdb:///{store_seeded(tmp_path)}")
    planned = plan_round(folder, engine=engine)
    try:
        lost = planned.plans[2]
        assert lost.attempts[0].prepared is not None
        lost.attempts[0].prepared.close()  # its step files are gone: this campaign cannot be written
        saved = store.save_campaigns(engine, planned.plans)
    finally:
        planned.close()
    failed = [s for s in saved if not isinstance(s, CampaignSaved)]
    assert len(failed) == 1 and lost.name in str(failed[0])
    listed = store.campaigns(engine)
    assert listed.height == len(planned.plans) - 1 and lost.name not in listed["name"].to_list()
    for row in listed.iter_rows(named=True):
        plan = next(p for p in planned.plans if p.name == row["name"])
        assert row["attempts"] == len(plan.attempts)  # each stored campaign whole


def test_a_round_read_by_worker_processes_plans_as_one_read_in_process(tmp_path: Path) -> None:
    folder = tmp_path / "round"
    real_round(folder)
    pooled, alone = plan_round(folder, workers=2), plan_round(folder, workers=0)
    pooled.close()
    alone.close()
    assert [(p.name, p.content_sha256, p.score, [a.as_row() for a in p.attempts]) for p in pooled.plans] == \
        [(p.name, p.content_sha256, p.score, [a.as_row() for a in p.attempts]) for p in alone.plans]
    assert len(pooled.plans) == 6 and pooled.logs == 53


def test_a_round_imported_twice_is_stored_once(tmp_path: Path) -> None:
    folder = tmp_path / "round"
    real_round(folder)
    engine = store.engine_from_url(f"duckdb:///{tmp_path / 's.duckdb'}")
    store.create_schema(engine)
    first, again = import_round(engine, folder), import_round(engine, folder)
    assert all(i.saved is not None and i.saved.created for i in first.imports)
    assert [i.saved for i in again.imports] == [i.saved and type(i.saved)(i.saved.campaign_id, False, i.saved.run_ids)
                                                for i in first.imports]
    assert store.counts(engine)["run"] == 53
