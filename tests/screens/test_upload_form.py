"""The upload form: model, accelerator, devices, precision and seq len start from what the log states; choices
travel to the worker as hints (a name not in the catalog is kept as typed and warned about, never refused); for
bytes already stored the form re-annotates that run from its stored steps and says what changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import store
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"  # states 1 device, bf16, seq 2048; no accelerator


def _uploaded(open_page: Callable[..., AppTest]) -> AppTest:
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((MEGATRON.name, MEGATRON.read_bytes(), "text/plain")).run()
    assert not at.exception and not at.error
    return at


def _widget(widgets: Any, label: str) -> Any:
    return next(w for w in widgets if w.label.startswith(label))


def _submit(at: AppTest, label: str) -> AppTest:
    return _widget(at.button, label).click().run()  # type: ignore[no-any-return]


def _said(at: AppTest) -> str:
    """Every sentence on the page, Markdown escapes removed."""
    said = "\n".join(e.value for kind in (at.info, at.warning, at.success, at.markdown, at.caption) for e in kind)
    return said.replace("\\", "")


def test_the_form_starts_from_what_the_log_states_and_never_tells_a_browser_user_to_pass_a_flag(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    at = _uploaded(open_page)
    assert _widget(at.selectbox, "Model").value == "" and _widget(at.selectbox, "Accelerator").value == ""
    assert _widget(at.number_input, "Devices").value == 1 and _widget(at.number_input, "Seq len").value == 2048
    assert _widget(at.selectbox, "Precision").value == "bf16"
    said = _said(at)
    assert "choose the accelerator in the upload form" in said and "--" not in said.replace("—", "")


def test_choices_are_applied_to_the_preview_and_stored_with_the_run(
        seeded_engine: Engine, open_page: Callable[..., AppTest], parses: Callable[[], list[str]]) -> None:
    at = _uploaded(open_page)
    _widget(at.selectbox, "Accelerator").set_value("gh200")
    _widget(at.number_input, "Devices").set_value(2)
    at = _submit(at, "Apply to the preview")
    assert not at.exception and not at.error
    assert [m.value for m in at.metric if m.label == "Steady tokens/s/device"] == ["25,266.8"]  # derived: six significant digits
    assert [m.value for m in at.metric if m.label == "MFU"] != ["—"]
    at.button(key="ru_commit").click().run()
    assert not at.exception
    row = store.run(seeded_engine, int(str(at.query_params["run"][0])))
    assert row is not None and row.config["accelerator"] == "gh200" and row.config["n_devices"] == 2
    assert row.summary is not None and row.summary["mfu"] is not None
    assert parses() == [MEGATRON.name, MEGATRON.name]  # the log's own preview, then the chosen one; none to store


def test_a_name_not_in_the_catalog_is_kept_as_typed_and_warned_about(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    at = _uploaded(open_page)
    _widget(at.text_input, "… or an accelerator name").set_value("NVIDIA GeForce RTX 9999")
    at = _submit(at, "Apply to the preview")
    assert not at.exception and not at.error
    assert "not in the catalog: kept as printed" in _said(at)
    at.button(key="ru_commit").click().run()
    row = store.run(seeded_engine, int(str(at.query_params["run"][0])))
    assert row is not None and row.config["accelerator_as_printed"] == "NVIDIA GeForce RTX 9999"
    assert row.config.get("accelerator") is None


def test_bytes_already_stored_are_recognised_unparsed_and_the_form_restates_that_run_and_says_what_changed(
        seeded_engine: Engine, open_page: Callable[..., AppTest], parses: Callable[[], list[str]]) -> None:
    stored = pipeline.ingest_bytes(seeded_engine, MEGATRON.read_bytes(), MEGATRON.name)
    assert stored.run_id is not None
    at = _uploaded(open_page)
    assert f"already stored as run {stored.run_id}" in _said(at)
    assert "Store this run" not in [b.label for b in at.button]
    _widget(at.selectbox, "Accelerator").set_value("gh200")
    _widget(at.number_input, "Devices").set_value(4)
    at = _submit(at, f"Update run {stored.run_id}")
    assert not at.exception and not at.error
    assert [s.value.replace("\\", "") for s in at.success] == [
        f"Run {stored.run_id}: accelerator: — → gh200; devices: 1 → 4."]
    row = store.run(seeded_engine, stored.run_id)
    assert row is not None and row.config["n_devices"] == 4 and row.config["accelerator"] == "gh200"
    was = stored.summary.tokens_per_s_per_device
    assert was is not None and row.summary is not None
    assert row.summary["tokens_per_s_per_device"] == pytest.approx(was / 4)
    assert row.n_steps == stored.steps and parses() == []  # recognised from its content hash: never parsed


def test_submitting_the_stored_values_again_changes_nothing_and_says_so(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    stored = pipeline.ingest_bytes(seeded_engine, MEGATRON.read_bytes(), MEGATRON.name)
    at = _submit(_uploaded(open_page), f"Update run {stored.run_id}")
    assert [s.value.replace("\\", "") for s in at.success] == [
        f"Run {stored.run_id}: nothing changed: the run already states these values."]


def test_a_claims_file_has_no_form_its_rows_name_their_own_model_and_accelerator(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    claims = LOGS / "claims_example.csv"
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((claims.name, claims.read_bytes(), "text/csv")).run()
    assert not at.exception and not at.error
    assert not [w for w in at.selectbox if w.label.startswith("Model")]
    assert [b.label for b in at.button] == ["Store these claims"]
