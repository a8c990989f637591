"""The Runs page's upload panel: upload -> spooled to disk -> (already stored?) -> preview (-> the form's choices)
-> store.

The uploaded file arrives on disk (screens._upload_box: written as it arrives, never held whole in the server's
memory) and its content hash is read there: bytes already stored are recognised before any parse, and the worker
process reads the file from its path. An
upload is parsed once per set of choices: the prepared run is kept in the session (under the content hash and the
choices it was prepared with), so the reruns Streamlit makes show it and store it without parsing again. The form
below the preview (model, accelerator, devices, precision, seq len) starts from what the log states; "Store this
run" submits the form, so what is stored is what the form shows (choices not yet applied are applied first). For
bytes already stored, the form re-annotates the stored run instead (ingest.pipeline.restate: nothing parsed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping  # st.session_state is one, keyed by str or int
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ingest import pipeline, upload, worker
from ingest.hints import hints_for
from ingest.names import HEAD_BYTES
from perfledger import store
from perfledger.errors import NoKnownNames, PerfledgerError, UnknownFormat
from perfledger.records import SaveResult
from perfledger.views import links
from perfledger.views import upload as up
from perfledger.views.registry import Page
from perfledger.views.runs import IMPORT_FORMATS as IMPORTS
from screens import _keymap, _ui, _upload_box
from screens._preview import show_claims_preview, show_preview
from screens._writes import token_unlocks_writing

# Session keys outside the page's widget prefix: a link that resets the widgets must not drop a run unclosed.
HELD = "upload_prepared"  # (content SHA-256 + the choices, its worker.Prepared)
WORKING = "upload_working"  # (content SHA-256 + the choices, the worker.Job preparing it)
STATED = "upload_stated"  # (content SHA-256, the up.Choices its log states)
CHOSEN = "upload_chosen"  # (content SHA-256, the up.Choices the preview was prepared with)
STORING = "upload_storing"  # content SHA-256 of a run to store once prepared with the choices just submitted
STORED = "upload_stored"  # (content SHA-256, the run they were stored as from this session, "run" or "import")
MAPPED = frozenset({"metrics", "key_value"})  # formats read through the key vocabulary
Tick = Callable[[float], None]  # called with the seconds a worker has been at it, a few times a second


def _quiet(_: float) -> None:
    return None


def limits() -> worker.Limits:
    cfg = _ui.settings()
    return worker.Limits(timeout_s=cfg.ingest_timeout_s, memory_mb=cfg.ingest_memory_mb)


def _db_url(engine: store.Engine) -> str:
    return store.url_of(engine)


def prepared_upload(state: MutableMapping[Any, Any], spooled: upload.Spooled, engine: store.Engine, limit: int,
                    tick: Tick = _quiet, overrides: Mapping[str, Any] | None = None) -> worker.Prepared:
    """The upload's prepared run: parsed by a worker process at its first render (tick(seconds) while it works),
    then taken from `state` (the session) on every rerun; a new upload, or new `overrides` (the keyword arguments
    of ingest.hints.hints), replaces (and closes) the one held before. A rerun that interrupts the wait finds the
    same worker in `state` and waits on."""
    digest = spooled.content_sha256 + json.dumps(dict(overrides or {}), sort_keys=True)
    held = state.get(HELD)
    if held is not None and held[0] == digest:
        return held[1]  # type: ignore[no-any-return]
    job = state.get(WORKING)
    if job is None or job[0] != digest:
        drop_held(state)
        job = state[WORKING] = (digest, worker.start_prepare(spooled.path, spooled.file_name, _db_url(engine), limit,
                                                             limits(), overrides,
                                                             owner=_upload_box.session_id()))
    try:
        worker.wait(job[1], tick)
    finally:
        if job[1].poll():
            state.pop(WORKING, None)
    prepared = worker.prepared_from(job[1])
    state[HELD] = (digest, prepared)
    return prepared


def store_prepared(state: MutableMapping[Any, Any], engine: store.Engine, tick: Tick = _quiet) -> SaveResult:
    """Store the previewed run as it was prepared (by a worker process, nothing parsed again), then let it go;
    after a failure, or a rerun that interrupts the wait (the store rolls that run back), it is still held."""
    job = worker.start_save(state[HELD][1], _db_url(engine), limits())
    try:
        worker.wait(job, tick)
    finally:
        job.stop()
    saved = worker.saved_from(job)
    drop_held(state)
    return saved


def drop_held(state: MutableMapping[Any, Any]) -> None:
    """Let go of the held run (removing its steps) and stop a worker still preparing one."""
    held = state.pop(HELD, None)
    if held is not None:
        held[1].close()
    job = state.pop(WORKING, None)
    if job is not None:
        job[1].cancel()


def _progress(what: str) -> tuple[Tick, Callable[[], None]]:
    """A line that counts a worker's seconds against its limit, and what clears it."""
    line, limit = st.empty(), limits().timeout_s

    def tick(seconds: float) -> None:
        line.caption(f":material/hourglass_top: {what} in a separate process: {seconds:.0f} s "
                     f"(stopped after {limit:g} s)")

    def clear() -> None:
        line.empty()

    return tick, clear


def _name_choice(where: Any, label: str, ids: list[str], current: str | None, key: Callable[[str], str]) -> str | None:
    """A catalog id from a list, or a name typed in (stored as printed, warned about): whichever was changed from
    its starting value; the typed name when both were."""
    known = current is not None and current in ids
    picked = where.selectbox(f"{label} (catalog id)", ["", *ids], index=ids.index(current) + 1 if current in ids else 0,
                             format_func=lambda v: v or "— not stated —", key=key(label.lower()))
    typed_first = "" if known else current or ""
    article = "an" if label[0] in "AEIOU" else "a"
    typed = str(where.text_input(f"… or {article} {label.lower()} name not in the catalog", typed_first,
                                 key=key(f"{label.lower()}_name"))).strip()
    return typed or None if typed != typed_first else picked or typed or None


def hint_form(page: Page[Any], db: store.Engine, first: up.Choices, digest: str,
              actions: tuple[str, ...]) -> tuple[str, up.Choices] | None:
    """The model, accelerator, devices, precision and seq len selectors, starting from `first`; once the form is
    submitted with one of the `actions` buttons, that action and the choices, else None. The last action's button
    is the page's commit button."""
    def key(name: str) -> str:
        return _ui.key(page, f"up_{name}_{digest[:12]}")  # a new file's form starts from what its log states

    with st.form(key("form"), border=False):
        st.caption("What the log states, corrected or completed here (a name not in the catalog is kept as "
                   "typed, with a warning):")
        c = st.columns(2)
        model = _name_choice(c[0], "Model", store.models(db)["id"].to_list(), first.model, key)
        accelerator = _name_choice(c[1], "Accelerator", store.accelerators(db)["id"].to_list(), first.accelerator, key)
        d = st.columns(3)
        devices = d[0].number_input("Devices (0 = not stated)", 0, value=first.devices or 0, step=1, key=key("dev"))
        options = list(dict.fromkeys(["", *up.PRECISIONS, first.precision or ""]))
        precision = d[1].selectbox("Precision", options, index=options.index(first.precision or ""),
                                   format_func=lambda v: v or "— not stated —", key=key("prec"))
        seq_len = d[2].number_input("Seq len (0 = not stated)", 0, value=first.seq_len or 0, step=1, key=key("seq"))
        b = st.columns(len(actions))
        clicked = [b[i].form_submit_button(a, key=key(f"act{i}") if i < len(actions) - 1 else _ui.key(page, "commit"),
                                           type="primary" if i == len(actions) - 1 else "secondary")
                   for i, a in enumerate(actions)]
    if not any(clicked):
        return None
    return actions[clicked.index(True)], up.chosen(model, accelerator, int(devices), precision, int(seq_len))


def restate_panel(page: Page[Any], db: store.Engine, run_id: int, digest: str) -> None:
    """For bytes already stored: the form re-annotates that run from its stored steps and says what changed."""
    row = store.run(db, run_id)
    if row is None:
        return
    if row.format in IMPORTS:
        st.info(f"These bytes are already stored as import {run_id} (the Sources page lists its figures).")
        return
    st.info(f"These bytes are already stored as run {run_id} ([open it]({links.run(run_id).href})); the form below "
            "updates its annotations and its figures from its stored steps.")
    first = up.stated(row.config)
    picked = hint_form(page, db, first, digest, (f"Update run {run_id}",))
    if picked is None:
        return
    try:
        outcome = pipeline.restate(db, run_id, hints_for(db, **up.overrides(first, picked[1]).as_json()))
    except PerfledgerError as exc:
        st.error(_ui.plain(exc), icon=":material/error:")
        return
    st.success(_ui.plain(f"Run {run_id}: {up.changes_text(outcome.hints_changed)}."), icon=":material/edit:")
    for warning in (w for w in outcome.summary.warnings if outcome.hints_changed and "catalog" in w):
        st.warning(_ui.plain(up.for_the_form(warning)))


@st.fragment
def upload_panel(page: Page[Any]) -> None:
    """Upload -> preview -> choices -> commit (or re-annotate); hidden when read-only, token-guarded when a token
    is set, refused on a reachable server without one. A fragment: choosing a file, applying choices or typing the
    token reruns this panel alone, not the whole page (its run list and charts); storing reruns the page."""
    cfg, db = _ui.settings(), _ui.engine()
    if cfg.read_only:
        return
    with st.expander("Upload a training log", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing(_ui.key(page, "tok")):
            return
        box = _ui.key(page, "file")
        try:
            spooled = _upload_box.file_in_box(
                st.session_state, box, "Megatron, NeMo, DeepSpeed, HF Trainer, torchtitan, MLPerf, TensorBoard, "
                f"metrics files (JSONL, CSV), claims CSV, console logs… (gzip ok, up to {cfg.max_upload_mb} MiB "
                "decompressed)", cfg.max_upload_mb)
        except PerfledgerError as exc:
            st.error(_ui.plain(exc), icon=":material/error:")
            return
        worker.prime(_db_url(db))  # the next step's worker waits with its modules loaded
        if spooled is None:
            drop_held(st.session_state)
            st.session_state.pop(STORED, None)
            return
        _preview_or_restate(page, db, spooled, cfg.max_upload_bytes)


def _preview_or_restate(page: Page[Any], db: store.Engine, spooled: upload.Spooled, limit: int) -> None:
    digest = spooled.content_sha256
    stored = st.session_state.get(STORED)
    if stored is not None and stored[0] == digest:  # just stored: the file stays in the box, unparsed
        st.success(f"Stored as {stored[2]} {stored[1]}: [open it]({links.run(stored[1]).href}).",
                   icon=":material/check:")
        restate_panel(page, db, stored[1], digest)
        return
    existing = store.find_run(db, digest)  # bytes stored before: recognised from their hash, never parsed
    if existing is not None:
        restate_panel(page, db, existing, digest)
        return
    chosen = _held_for(st.session_state, CHOSEN, digest) or up.Choices()
    tick, done = _progress("Reading the log")
    try:
        prepared = prepared_upload(st.session_state, spooled, db, limit, tick, chosen.as_json())
    except PerfledgerError as exc:  # said inside the panel; the run list below stays on screen
        done()
        st.error(_ui.plain(exc), icon=":material/error:")  # it quotes the file's name and text: never Markdown
        if isinstance(exc, UnknownFormat | NoKnownNames):  # its names may be mapped to the vocabulary
            _keymap.mapping_panel(page, spooled.head(HEAD_BYTES), digest, lambda: drop_held(st.session_state),
                                  expanded=True)
        return
    done()
    pre = prepared.run
    if pre.format in IMPORTS:  # published figures, each row with its own model and accelerator
        show_claims_preview(pre, prepared.claims)
        if st.button("Store these claims", type="primary", key=_ui.key(page, "commit")):
            store_panel(db, digest, "import")
        return
    if _held_for(st.session_state, STATED, digest) is None:
        st.session_state[STATED] = (digest, up.stated(pre.config))  # the first parse: nothing chosen yet
    if st.session_state.get(STORING) == digest:  # "Store this run" with new choices: prepared with them, now stored
        del st.session_state[STORING]
        store_panel(db, digest)
    show_preview(pre)
    if pre.format in MAPPED:
        _keymap.mapping_panel(page, spooled.head(HEAD_BYTES), digest, lambda: drop_held(st.session_state))
    stated = _held_for(st.session_state, STATED, digest) or up.Choices()
    submitted = hint_form(page, db, stated, digest, ("Apply to the preview", "Store this run"))
    if submitted is None:
        return
    action, picked = submitted
    if up.overrides(stated, picked) != chosen:  # the form shows other choices: prepare the run with them first
        st.session_state[CHOSEN] = (digest, up.overrides(stated, picked))
        if action == "Store this run":
            st.session_state[STORING] = digest
        _rerun_panel()
    if action == "Store this run":
        store_panel(db, digest)


def _rerun_panel() -> None:
    """Rerun the upload panel alone where it runs as a fragment of its own (a rerun it started), else the page."""
    try:
        st.rerun(scope="fragment")
    except StreamlitAPIException:  # a run of the whole page: the fragment scope is refused
        st.rerun()


def _held_for(state: MutableMapping[Any, Any], key: str, digest: str) -> up.Choices | None:
    held = state.get(key)
    return held[1] if held is not None and held[0] == digest else None


def store_panel(db: store.Engine, digest: str, stored_as: str = "run") -> None:
    """Store the previewed run and open it; the upload box then confirms it, with its link, and offers to
    re-annotate it (nothing parsed)."""
    tick, done = _progress("Storing the run")
    try:
        saved = store_prepared(st.session_state, db, tick)
    except PerfledgerError as exc:
        done()
        _ui.render_error(exc)
    st.session_state[STORED] = (digest, saved.run_id, stored_as)
    st.query_params.from_dict({"run": str(saved.run_id)})
    st.rerun()
