"""`python -m perfledger runs set RUN FIELD=VALUE... --reason` corrects a run's identity in place: its figures are
recomputed from its stored steps, every result row it produced carries the new identity (so the pages and exports
read it at once), the correction is kept with its time and reason, and the field's provenance says "user"."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from perfledger import store
from perfledger.store.corrections import corrections
from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "fixtures" / "logs" / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"


def _env(url: str) -> dict[str, str]:
    return os.environ | {"PERFLEDGER_DB_URL": url}


def perfledger(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run("perfledger", *args, env=_env(url))


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[str, int]:
    """The NeMo log ingested without its model: the run name, the one line that names it, respelled away."""
    url = f"duckdb:///{tmp_path / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    unnamed = tmp_path / LOG.name
    unnamed.write_bytes(LOG.read_bytes().replace(b"name: llama3_8b_", b"name: recipe_"))
    done = run("ingest", str(unnamed), "--json", env=_env(url), check=True)
    return url, int(json.loads(done.stdout)["run_id"])


def test_setting_the_model_recomputes_the_figures_and_the_verdict(stored: tuple[str, int]) -> None:
    url, run = stored
    before = json.loads(perfledger(url, "compare", str(run), "--json").stdout)
    assert before["headline"]["model_tflops_per_device"] is None and "states no model" in before["reason"]
    done = perfledger(url, "runs", "set", str(run), "model=llama3-8b", "--reason", "the recipe is llama3-8b")
    assert done.returncode == 0, done.stderr
    assert f"run {run}: corrected model: None -> llama3-8b" in done.stdout
    after = json.loads(perfledger(url, "compare", str(run), "--json").stdout)
    assert round(after["headline"]["model_tflops_per_device"], 1) == 1754.7
    assert round(after["published"]["ratio"], 4) == 0.9894


def test_the_correction_is_kept_with_its_time_and_reason_and_the_field_says_user(stored: tuple[str, int]) -> None:
    url, run = stored
    assert perfledger(url, "runs", "set", str(run), "devices=16", "gbs=256", "--reason", "two nodes").returncode == 0
    engine = store.engine_from_url(url)
    kept = corrections(engine, run).to_dicts()
    assert [(c["field"], c["before"], c["after"], c["reason"]) for c in kept] == [
        ("n_devices", "8", "16", "two nodes"), ("global_batch", "128", "256", "two nodes")]
    identity = (store.run(engine, run) or pytest.fail("run gone")).config["identity"]
    assert identity["n_devices"]["from"] == "user" and "two nodes" in identity["n_devices"]["where"]
    assert f"correction {kept[0]['id']}" in identity["n_devices"]["where"]
    listed = perfledger(url, "runs", "corrections", str(run)).stdout
    assert "n_devices" in listed and "two nodes" in listed


def test_every_result_row_of_the_run_and_the_exported_run_list_show_the_new_values(stored: tuple[str, int]) -> None:
    url, run = stored
    assert perfledger(url, "runs", "set", str(run), "model=llama3-8b", "devices=16").returncode == 0
    rows = store.results(store.engine_from_url(url), run_id=run)
    assert set(rows["model_id"].to_list()) == {"llama3-8b"} and set(rows["n_devices"].to_list()) == {16}
    assert "reported" in rows["evidence"].to_list()  # the log's own TFLOP/s keeps its row, re-identified
    listed = perfledger(url, "export", "runs", "", "--format", "json")
    shown = next(r for r in json.loads(listed.stdout) if r["id"] == run)
    assert (shown["model"], shown["n_devices"]) == ("llama3-8b", 16)
    # 16 devices at the same steps: half the tokens/s per device
    assert round(shown["tokens_per_s_per_device"]) == round(30298.7 / 2)


@pytest.mark.parametrize(("args", "said"), [
    (["colour=red"], "'colour' is not a field a correction sets"),
    (["devices=0"], "devices must be positive"),
    (["devices"], "a correction is FIELD=VALUE"),
])
def test_bad_input_exits_2_with_one_sentence(stored: tuple[str, int], args: list[str], said: str) -> None:
    url, run = stored
    done = perfledger(url, "runs", "set", str(run), *args)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_run_exits_2(stored: tuple[str, int]) -> None:
    done = perfledger(stored[0], "runs", "set", "999", "devices=2")
    assert done.returncode == 2 and "there is no run 999" in done.stderr
