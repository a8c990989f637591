"""The upload's model, accelerator, devices and precision selectors: a choice that differs from the log is an
override the stored run carries; keeping what the log states stores the first preparation."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.records import RunConfig
from screens import _upload, _upload_form
from tests.conftest import LOGS

LOG = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def choosing(monkeypatch: pytest.MonkeyPatch, chosen: RunConfig) -> None:
    monkeypatch.setattr(_upload_form, "overrides", lambda *_: chosen)


def test_keeping_what_the_log_states_stores_the_first_preparation(
        seeded_store: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    choosing(monkeypatch, RunConfig())
    session: dict[Any, Any] = {}
    first = _upload.prepared_upload(session, LOG.read_bytes(), LOG.name, seeded_store, 2**30)
    assert _upload_form.annotated_upload(session, first, LOG.read_bytes(), LOG.name, seeded_store, 2**30) is first
    assert _upload_form.HELD not in session
    _upload.drop_held(session)


def test_a_chosen_accelerator_devices_and_precision_are_stored_with_the_run(
        seeded_store: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = RunConfig(accelerator="h100-sxm", n_devices=8, precision="bf16")
    choosing(monkeypatch, chosen)
    session: dict[Any, Any] = {}
    raw = LOG.read_bytes()
    first = _upload.prepared_upload(session, raw, LOG.name, seeded_store, 2**30)
    assert first.config.get("accelerator") != "h100-sxm"
    annotated = _upload_form.annotated_upload(session, first, raw, LOG.name, seeded_store, 2**30)
    again = _upload_form.annotated_upload(session, first, raw, LOG.name, seeded_store, 2**30)  # the click's rerun
    assert again is annotated
    saved = _upload.store_prepared(session, seeded_store, annotated)
    row = store.run(seeded_store, saved.run_id)
    assert row is not None
    assert (row.config["accelerator"], row.config["n_devices"], row.config["precision"]) == ("h100-sxm", 8, "bf16")
    _upload_form.drop_annotated(session)
