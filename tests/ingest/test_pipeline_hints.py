"""Hints given for a file already stored update that run from its stored steps, without parsing the file again."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest import pipeline
from ingest.hints import hints
from ingest.pipeline import ingest_bytes
from perfledger import store

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "cscs_gh200_smoke2_then_main_10n4g_rankprefix.out"


def _no_parse(*_: object) -> None:
    raise AssertionError("the file was parsed again")


def test_hints_update_the_stored_run_and_its_figures_without_a_parse(writable_engine: Engine,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    raw = LOG.read_bytes()
    first = ingest_bytes(writable_engine, raw, LOG.name)
    assert first.run_id is not None and first.summary.mfu is None
    monkeypatch.setattr(pipeline, "_parse", _no_parse)
    updated = ingest_bytes(writable_engine, raw, LOG.name,
                           hints(devices=80, accelerator="NVIDIA H100 80GB HBM3", precision="bf16", model="llama3-8b"))
    assert updated.run_id == first.run_id and not updated.created
    assert set(updated.hints_changed) >= {"n_devices", "accelerator", "model"}  # bf16 was stated already
    assert updated.hints_changed["n_devices"] == (40, 80)
    tps = first.summary.tokens_per_s_per_device
    assert tps is not None and updated.summary.tokens_per_s_per_device == pytest.approx(tps / 2)
    stored = store.run(writable_engine, first.run_id)
    assert stored is not None and stored.summary is not None
    assert stored.config["n_devices"] == 80 and stored.config["accelerator"] == "h100-sxm"
    assert stored.summary["mfu"] == pytest.approx(updated.summary.mfu)
    assert [x["summarised"] for x in stored.summary["launches"]] == [False, True]  # still the longest launch
    rows = store.results(writable_engine).filter(store.results(writable_engine)["run_id"] == first.run_id)
    assert set(rows["metric"]) >= {"mfu", "model_tflops_per_device", "tokens_per_s_per_device"}
    assert rows.filter(rows["metric"] == "tokens_per_s_per_device").height == 1  # replaced, not added
    assert set(rows["n_devices"]) == {80}


def test_the_same_hints_again_change_nothing(writable_engine: Engine) -> None:
    raw = LOG.read_bytes()
    ingest_bytes(writable_engine, raw, LOG.name, hints(devices=80))
    again = ingest_bytes(writable_engine, raw, LOG.name, hints(devices=80))
    assert again.hints_changed == {} and again.summary.config["n_devices"] == 80
