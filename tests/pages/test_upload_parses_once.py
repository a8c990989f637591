"""An upload is parsed once: the preview's prepared run is kept in the session and stored as it was previewed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ingest import pipeline
from ingest.detect import detect_head
from ingest.parsers.base import LogParser
from perfledger import store
from perfledger.records import ParseSummary
from screens import _upload
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every parse of a whole file (a parser's finish()), by file name."""
    parses: list[str] = []
    def detect_counted(head: bytes, file_name: str) -> type[LogParser]:
        found = detect_head(head, file_name=file_name)

        class Counted(found):  # type: ignore[valid-type, misc]
            def finish(self) -> ParseSummary:
                parses.append(self.file_name)
                return super().finish()  # type: ignore[no-any-return]

        return Counted

    monkeypatch.setattr(pipeline, "detect_head", detect_counted)
    return parses


def test_preview_reruns_and_store_parse_the_upload_once(seeded_store: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    parses = counting_parses(monkeypatch)
    session: dict[Any, Any] = {}
    raw = MEGATRON.read_bytes()
    limit = 2**30
    shown = _upload.prepared_upload(session, raw, MEGATRON.name, seeded_store, limit)  # the upload's first render
    again = _upload.prepared_upload(session, raw, MEGATRON.name, seeded_store, limit)  # the rerun of the click
    assert again is shown
    saved = _upload.store_prepared(session, seeded_store, again)
    assert parses == [MEGATRON.name]
    assert saved.created and store.counts(seeded_store)["run"] == 1
    assert store.steps(seeded_store, saved.run_id).height == shown.steps.rows > 0
    row = store.run(seeded_store, saved.run_id)
    assert row is not None and row.content_sha256 == shown.content_sha256 and row.summary == dict(shown.summary)
    assert _upload.HELD not in session and not any(Path(f).exists() for f in shown.steps.files)


def test_a_new_upload_replaces_the_held_run_and_removes_its_step_files(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = counting_parses(monkeypatch)
    session: dict[Any, Any] = {}
    monkeypatch.setattr(store, "catalog_rows", lambda *_: (None, None))
    first = _upload.prepared_upload(session, MEGATRON.read_bytes(), MEGATRON.name, store.engine_from_url(), 2**30)
    other = LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"
    second = _upload.prepared_upload(session, other.read_bytes(), other.name, store.engine_from_url(), 2**30)
    assert parses == [MEGATRON.name, other.name]
    assert session[_upload.HELD][1] is second
    assert not any(Path(f).exists() for f in first.steps.files)
    _upload.drop_held(session)
    assert not any(Path(f).exists() for f in second.steps.files)
