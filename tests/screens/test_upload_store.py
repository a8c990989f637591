"""What "Store this run" stores (the choices the form shows, applied or not), the confirmation that follows, and
a claims file's preview (rows to add, update, refuse; names left unlinked, with the command that links them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import store
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"  # states 1 device, bf16, seq 2048; no accelerator
CLAIMS = LOGS / "claims_example.csv"


def _uploaded(open_page: Callable[..., AppTest], path: Path) -> AppTest:
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((path.name, path.read_bytes(), "text/plain")).run()
    assert not at.exception and not at.error
    return at


def _widget(widgets: Any, label: str) -> Any:
    return next(w for w in widgets if w.label.startswith(label))


def _said(at: AppTest) -> str:
    said = "\n".join(e.value for kind in (at.info, at.warning, at.success, at.markdown, at.caption) for e in kind)
    return said.replace("\\", "")


def _run_id(at: AppTest) -> int:
    value = at.query_params["run"]
    return int(value[0] if isinstance(value, list) else value)


def test_store_without_apply_stores_the_choices_the_form_shows_and_confirms_with_the_runs_link(
        seeded_engine: Engine, open_page: Callable[..., AppTest], parses: Callable[[], list[str]]) -> None:
    at = _uploaded(open_page, MEGATRON)
    _widget(at.selectbox, "Accelerator").set_value("gh200")
    at.button(key="ru_commit").click().run()  # "Store this run", never "Apply to the preview"
    assert not at.exception and not at.error
    run_id = _run_id(at)
    row = store.run(seeded_engine, run_id)
    assert row is not None and row.config["accelerator"] == "gh200" and row.summary is not None
    assert row.summary["mfu"] is not None  # the figures of the chosen accelerator, not of none
    assert [s.value for s in at.success] == [f"Stored as run {run_id}: [open it](/runs?run={run_id})."]
    assert parses() == [MEGATRON.name, MEGATRON.name]  # the log's own preview, then the one with the choice


def test_store_with_the_choices_already_applied_parses_nothing_more(
        seeded_engine: Engine, open_page: Callable[..., AppTest], parses: Callable[[], list[str]]) -> None:
    at = _uploaded(open_page, MEGATRON)
    at.button(key="ru_commit").click().run()
    assert not at.exception and not at.error
    row = store.run(seeded_engine, _run_id(at))
    assert row is not None and row.config.get("accelerator") is None and parses() == [MEGATRON.name]


def _claims_with_an_unknown_accelerator(folder: Path) -> Path:
    """The example's rows under a source of their own, one more on an accelerator no catalog row names, and one
    left under the curated source (refused: an import cannot add figures under it)."""
    lines = CLAIMS.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("metric,"))
    rows = [line.replace("nv_blog_nemo_h200_2023", "team_h200_notes") for line in lines[header + 1:]]
    unknown = rows[0].replace("NVIDIA H200 SXM 141GB", "Mystery X1000 accelerator").replace(",8,NeMo,", ",16,NeMo,")
    path = folder / "claims_unknown.csv"
    path.write_text("\n".join([lines[header], *rows, unknown, lines[header + 1]]) + "\n")
    return path


def test_a_claims_file_previews_its_rows_to_add_and_its_unlinked_names_with_the_linking_command(
        seeded_engine: Engine, open_page: Callable[..., AppTest], tmp_path: Path) -> None:
    at = _uploaded(open_page, _claims_with_an_unknown_accelerator(tmp_path))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["To add"] == "5" and metrics["Refused"] == "1" and metrics["To update"] == "0"
    said = _said(at)
    assert "claims file" in said and "0 steps" not in said and "log ·" not in said
    assert "Mystery X1000 accelerator" in said and "python -m perfledger catalog link" in said
    assert [r for r in at.dataframe[0].value["refused row"]] == [
        ("claims_unknown.csv:7: source 'nv_blog_nemo_h200_2023' is curated (loaded from data/sources.csv): an import "
        "cannot add figures under it; give the row a source of its own")]
    before = store.counts(seeded_engine)["result"]
    at.button(key="ru_commit").click().run()
    assert not at.exception and not at.error
    assert store.counts(seeded_engine)["result"] == before + 5
    run_id = _run_id(at)
    assert [s.value for s in at.success] == [f"Stored as import {run_id}: [open it](/runs?run={run_id})."]
