"""An upload is parsed once, in a worker process: the preview's prepared run is kept in the session and stored
as it was previewed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ingest.upload import Spooled, spool
from perfledger import store
from screens import _upload
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def _spooled(path: Path) -> Spooled:
    with path.open("rb") as f:
        return spool(f, path.name, 2**30)


def test_preview_reruns_and_store_parse_the_upload_once(seeded_store: Engine,
                                                        parses: Callable[[], list[str]]) -> None:
    session: dict[Any, Any] = {}
    spooled = _spooled(MEGATRON)
    limit = 2**30
    ticks: list[float] = []
    shown = _upload.prepared_upload(session, spooled, seeded_store, limit, ticks.append).run  # first render
    again = _upload.prepared_upload(session, spooled, seeded_store, limit).run  # the rerun of the click
    assert again is shown and ticks  # the first render showed the worker's progress
    held = session[_upload.HELD][1]
    saved = _upload.store_prepared(session, seeded_store)
    assert parses() == [MEGATRON.name]
    assert saved.created and store.counts(seeded_store)["run"] == 1
    assert store.steps(seeded_store, saved.run_id).height == shown.steps.rows > 0
    row = store.run(seeded_store, saved.run_id)
    assert row is not None and row.content_sha256 == shown.content_sha256 and row.summary == dict(shown.summary)
    assert _upload.HELD not in session and not held.folder.exists()


def test_a_new_upload_replaces_the_held_run_and_removes_its_step_files(store_engine: Engine,
                                                                      parses: Callable[[], list[str]]) -> None:
    session: dict[Any, Any] = {}
    first = _upload.prepared_upload(session, _spooled(MEGATRON), store_engine, 2**30).run
    first_folder = session[_upload.HELD][1].folder
    assert all(Path(f).exists() for f in first.steps.files)
    other = LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"
    second = _upload.prepared_upload(session, _spooled(other), store_engine, 2**30).run
    assert parses() == [MEGATRON.name, other.name]
    assert session[_upload.HELD][1].run is second
    assert not first_folder.exists() and not any(Path(f).exists() for f in first.steps.files)
    _upload.drop_held(session)
    assert not any(Path(f).exists() for f in second.steps.files)
