"""The run page opens with the run's verdict (the same as `python -m perfledger compare`), and its identity form
corrects the run in place: the figures recomputed, the correction kept, every page showing the new values at once."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import store
from perfledger.records import RunConfig
from perfledger.store.corrections import corrections
from tests.conftest import LOGS

NEMO = LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"


def _store(seeded_db: Path, folder: Path, config: RunConfig) -> tuple[str, int]:
    shutil.copy(seeded_db, folder / "perfledger.duckdb")
    url = f"duckdb:///{folder / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    unnamed = NEMO.read_bytes().replace(b"name: llama3_8b_", b"name: recipe_")  # the line naming the model, gone
    with pipeline.prepare(unnamed, NEMO.name, config, engine=engine, limit=2**30) as prepared:
        run_id = store.save_run(engine, prepared).run_id
    engine.dispose()
    return url, run_id


def _said(at: AppTest) -> str:
    said = "\n".join(e.value for kind in (at.info, at.success, at.markdown, at.caption, at.subheader) for e in kind)
    return said.replace("\\", "")


def test_the_verdict_comes_first_with_the_published_figure_it_compares_with(
        seeded_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    url, run_id = _store(seeded_db, tmp_path, RunConfig(model="llama3-8b"))
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    at = open_page("runs", f"run={run_id}")
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value.replace("\\", "").startswith(f"Verdict: run {run_id} · llama3-8b on 8 × b200")
    first = [(m.label, m.value) for m in at.metric[:4]]
    assert first == [("Tokens/s per device", "30,298.7"), ("Model TFLOP/s per device", "1,754.68"),
                     ("MFU", "38.993%"), ("Of the published figure", "98.9378%")]  # derived: 6 significant digits
    said = _said(at)
    assert "98.9% of the published 30,624 tokens/s per device (result" in said
    assert "MFU against 4500 TFLOP/s dense fp8 per GPU (b200)" in said
    assert "run 1,559.5 vs published 1,576.0" in said  # TFLOP/s under NVIDIA's own count


def test_the_identity_form_corrects_the_run_and_every_page_reads_the_new_values(
        seeded_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    url, run_id = _store(seeded_db, tmp_path, RunConfig())
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    at = open_page("runs", f"run={run_id}")
    assert "states no model" in _said(at)
    at.selectbox(key="ru_id_model").set_value("llama3-8b")
    at.text_input(key="ru_id_reason").set_value("the recipe's model")
    at = next(b for b in at.button if b.label == "Correct and recompute").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert f"run {run_id}: corrected model: None -> llama3-8b" in _said(at)
    assert [m.value for m in at.metric if m.label == "Model TFLOP/s per device"] == ["1,754.68"]
    kept = corrections(store.engine_from_url(url), run_id)
    assert kept["field"].to_list() == ["model"] and kept["reason"].to_list() == ["the recipe's model"]
    listed = open_page("runs").dataframe[0].value
    assert listed.loc[listed["id"] == run_id, "model"].to_list() == ["llama3-8b"]
