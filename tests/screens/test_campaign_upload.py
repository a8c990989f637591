"""The Campaigns page imports a zipped folder as `python -m ingest DIR` imports the folder; the panel is hidden when
the store is read-only and asks for the token when one is set."""

from __future__ import annotations

import io
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import worker
from perfledger import store

SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns" / "bigscience_gpt2_meg_base_sweep"


def zipped(folder: Path, more: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, path.name)
        archive.writestr("core.bin", bytes(range(256)) * 8)
        for name, text in (more or {}).items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_zipped_sweep_is_stored_as_one_campaign_with_its_refusals_said(seeded_url: str,
                                                                        open_page: Callable[..., AppTest]) -> None:
    at = open_page("campaigns")
    at.file_uploader(key="ca_zip").set_value(("sweep.zip", zipped(SWEEP), "application/zip")).run()
    at.button(key="ca_go").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Stored as campaign 1 (sweep, 5 attempts): pick it below."]
    assert any(w.value.startswith("Refused\\: core\\.bin\\: not a log format") for w in at.warning)  # shown escaped
    listed = at.dataframe[0].value
    assert listed["name"].tolist() == ["sweep"] and listed["failed"].tolist() == [5]


def test_a_folder_of_many_refused_files_is_said_in_one_box_counted_by_reason(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    """10,000 refused files were 10,000 boxes: 93 s to draw, while other sessions' pages slowed to 3.4-5.4 s."""
    notes = {f"notes/n{i:04d}.txt": f"meeting notes {i}\n" for i in range(600)}
    at = open_page("campaigns")
    at.file_uploader(key="ca_zip").set_value(("sweep.zip", zipped(SWEEP, notes), "application/zip")).run()
    at.button(key="ca_go").click().run(timeout=180)
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Stored as campaign 1 (sweep, 5 attempts): pick it below."]
    (box,) = [w.value.replace("\\", "") for w in at.warning]
    lines = box.splitlines()
    assert lines[0] == "Refused 601 files:" and len(lines) == 2  # one line per reason
    assert lines[1].startswith("- 601 files: not a log format perfledger reads (known: ")
    assert lines[1].endswith("(core.bin, notes/n0000.txt, notes/n0001.txt and 598 more)")


def test_a_zipped_folder_is_imported_in_the_upload_worker_under_its_time_limit(
        seeded_engine: Engine, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_INGEST_TIMEOUT_S", "1")
    monkeypatch.setattr(worker, "COMMAND", (sys.executable, "-c", "import time; time.sleep(60)"))
    before = store.counts(seeded_engine)
    at = open_page("campaigns")
    at.file_uploader(key="ca_zip").set_value(("sweep.zip", zipped(SWEEP), "application/zip")).run()
    at.button(key="ca_go").click().run()
    assert not at.exception, at.exception
    said = "the upload took longer than 1 s to import and was stopped\\; nothing was stored"  # shown escaped
    assert [e.value for e in at.error] == [said]
    assert store.counts(seeded_engine) == before and store.campaigns(seeded_engine).is_empty()


def test_the_zip_panel_is_hidden_when_read_only(seeded_url: str, open_page: Callable[..., AppTest],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_READ_ONLY", "1")
    at = open_page("campaigns")
    assert not at.exception and not list(at.get("file_uploader"))


def test_the_zip_panel_asks_for_the_token_when_one_is_set(seeded_url: str, open_page: Callable[..., AppTest],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "s3cret-token")
    at = open_page("campaigns")
    assert not list(at.get("file_uploader"))
    at.text_input(key="ca_tok").input("s3cret-token").run()
    assert not at.exception and list(at.get("file_uploader"))
