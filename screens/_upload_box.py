"""The upload box of a write panel: the file a person chose, on disk, as an ingest.upload.Spooled.

Served by app.py, the box is a small component that sends the file in one PUT to perfledger's upload route
(ingest.upload_route), which writes it to disk as it arrives; the box's state names the upload, taken here once,
and the box offers it again until the page says it took it (`taken`): on a freshly started server, the rerun a
state change asks for while the page's first run is still going was dropped, and the file ignored.
Where that route is not served (a page test, `streamlit run dashboard.py`), Streamlit's file uploader stands in and
its file is copied to disk. Either way the file is held in the session until another one replaces it or the box is
emptied; folders and tickets of sessions that ended are removed on the next box drawn.
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ingest import upload, upload_route
from perfledger.errors import UploadRefused
from perfledger.settings import browser_upload_mb

ASSETS = Path(__file__).with_name("assets")
BOX = st.components.v2.component(
    "perfledger_upload_box",
    html=(ASSETS / "upload_box.html").read_text(),
    css=(ASSETS / "upload_box.css").read_text(),
    js=(ASSETS / "upload_box.js").read_text(),
)
SWEEP_EVERY_S = 30.0
MOST_SAID = 600  # characters of a refusal said on the page: the route's sentence, with a file name in it
_swept = [0.0]


def session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def session_alive(sid: str) -> bool:
    """Whether a browser session still runs, or may resume (Streamlit keeps a disconnected one a while)."""
    if not Runtime.exists():
        return True
    runtime = Runtime.instance()
    sessions = getattr(runtime, "_session_mgr", None)  # active and resumable sessions; no public call lists both
    return runtime.is_active_session(sid) or (sessions is not None and sessions.get_session_info(sid) is not None)


def sweep_abandoned() -> None:
    """Remove the upload folders (files uploaded, previews never stored) and tickets of sessions that ended."""
    if time.monotonic() - _swept[0] >= SWEEP_EVERY_S:
        _swept[0] = time.monotonic()
        upload_route.revoke(session_alive)
        upload.remove_abandoned(session_alive)


def file_in_box(state: MutableMapping[Any, Any], key: str, label: str, limit_mb: int,
                accept: tuple[str, ...] = ()) -> upload.Spooled | None:
    """The file in the upload box `key`, on disk (a new file replaces, and removes, the one held before); None
    while the box is empty. PerfledgerError when the file is refused (too large; a full disk under it)."""
    sweep_abandoned()
    if not upload_route.mounted():
        return _from_file_uploader(state, key, label, limit_mb, accept)
    try:  # the box's state from its last change, taken before the box is drawn, so that it shows the file taken
        return _taken(state, key, _picked(state.get(key)))
    finally:
        BOX(key=key, data=_box_data(state, key, label, limit_mb, accept), on_file_change=_nothing)


def _picked(box_state: Any) -> dict[str, Any]:
    picked = box_state.get("file") if hasattr(box_state, "get") else getattr(box_state, "file", None)
    return picked if isinstance(picked, dict) else {}


def _taken(state: MutableMapping[Any, Any], key: str, picked: dict[str, Any]) -> upload.Spooled | None:
    if picked.get("error"):
        empty_box(state, key)
        raise UploadRefused(str(picked["error"])[:MOST_SAID])
    upload_id = str(picked.get("upload", ""))
    held = state.get(_held(key))
    if not upload_id:
        empty_box(state, key)
        return None
    if held is not None and held[0] == upload_id:
        return held[1]  # type: ignore[no-any-return]
    empty_box(state, key)
    ticket = state.get(_ticket(key))
    spooled = None if ticket is None else upload_route.take(ticket, upload_id)
    if spooled is None:
        raise UploadRefused(upload_route.EXPIRED)
    state[_held(key)] = (upload_id, spooled)
    return spooled


def empty_box(state: MutableMapping[Any, Any], key: str) -> None:
    """Let go of (and remove) the file held for the box `key`."""
    held = state.pop(_held(key), None)
    if held is not None:
        held[1].close()


def _box_data(state: MutableMapping[Any, Any], key: str, label: str, limit_mb: int,
              accept: tuple[str, ...]) -> dict[str, Any]:
    held = state.get(_held(key))
    ticket = state.get(_ticket(key))
    if ticket is None or not upload_route.live(ticket):
        ticket = state[_ticket(key)] = upload_route.issue(session_id(), limit_mb * 2**20)
    return {"url": upload_route.PATH + ticket, "label": label, "accept": ",".join(accept),
            "most_bytes": upload.most_raw_bytes(limit_mb * 2**20), "limit_text": f"{limit_mb} MiB",
            "current": None if held is None else {"name": held[1].file_name, "size": held[1].size},
            "taken": None if held is None else held[0]}  # the box offers its upload until the page took it


def _from_file_uploader(state: MutableMapping[Any, Any], key: str, label: str, limit_mb: int,
                        accept: tuple[str, ...]) -> upload.Spooled | None:
    f = st.file_uploader(label, type=[a.lstrip(".") for a in accept] or None, key=key,
                         max_upload_size=browser_upload_mb(limit_mb))
    if f is None:
        empty_box(state, key)
        return None
    file_id = str(getattr(f, "file_id", "") or f"{f.name}:{f.size}")
    held = state.get(_held(key))
    if held is not None and held[0] == file_id:
        return held[1]  # type: ignore[no-any-return]
    empty_box(state, key)
    f.seek(0)
    spooled = upload.spool(f, f.name, limit_mb * 2**20, owner=session_id())
    state[_held(key)] = (file_id, spooled)
    return spooled


def _held(key: str) -> str:
    # Outside the page's widget prefix and its generation suffix: a link that resets the widgets (a new box) finds
    # the file held for the box before, and lets it go.
    return f"upload_file:{key.partition('~')[0]}"


def _ticket(key: str) -> str:
    return f"upload_ticket:{key.partition('~')[0]}"


def _nothing() -> None:
    return None
