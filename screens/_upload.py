"""The write panels of the Runs page: upload -> preview (-> the form's choices) -> store, and the token guard
they share.

An upload is parsed once per set of choices: the prepared run is kept in the session (under the SHA-256 of the
uploaded bytes and the choices it was prepared with), so the reruns Streamlit makes (the click on "Store this run"
among them) show it and store it without parsing again. The form below the preview (model, accelerator, devices,
precision, seq len) starts from what the log states; choices that differ travel to the worker as hints. For bytes
already stored, the form re-annotates the stored run instead (ingest.pipeline.restate: nothing parsed).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, MutableMapping  # st.session_state is one, keyed by str or int
from typing import Any

import streamlit as st

from ingest import pipeline, worker
from ingest.hints import hints_for
from perfledger import store
from perfledger.errors import NoKnownNames, PerfledgerError, UnknownFormat
from perfledger.records import PreparedRun, SaveResult, more_problems
from perfledger.views import upload as up
from perfledger.views.registry import Page
from perfledger.views.runs import IMPORT_FORMATS as IMPORTS
from screens import _keymap, _ui

# Session keys outside the page's widget prefix: a link that resets the widgets must not drop a run unclosed.
HELD = "upload_prepared"  # (SHA-256 of the uploaded bytes + the choices, its worker.Prepared)
WORKING = "upload_working"  # (SHA-256 of the uploaded bytes + the choices, the worker.Job preparing it)
STATED = "upload_stated"  # (SHA-256 of the uploaded bytes, the up.Choices its log states)
CHOSEN = "upload_chosen"  # (SHA-256 of the uploaded bytes, the up.Choices the preview was prepared with)
STORED = "upload_stored"  # (SHA-256 of the uploaded bytes, the run they were stored as from this session)
MAPPED = frozenset({"metrics", "key_value", "wandb_history", "composer"})  # formats read through the key vocabulary
Tick = Callable[[float], None]  # called with the seconds a worker has been at it, a few times a second


def _quiet(_: float) -> None:
    return None


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def show_preview(pre: PreparedRun) -> None:
    """Format, steps and the steady-state figures the run would be stored with; notes as one list."""
    ss, cfg_ = pre.summary, pre.config
    what = " · ".join(str(cfg_[k]) for k in ("model", "accelerator", "precision") if cfg_.get(k))
    st.markdown(f"**{pre.format}** log · {pre.steps.rows:,} steps · {pre.skipped_lines:,} lines skipped"
                + (f" · {_ui.plain(what)}" if what else ""))  # names as the log printed them: shown as text
    for column, figure in zip(st.columns(5), up.preview_figures(pre.format, cfg_, ss, pre.results), strict=True):
        column.metric(figure.label, figure.text, help=figure.help or None)
    if ss["first_step"] is not None:
        st.caption(f"Steady window: steps {ss['first_step']}–{ss['last_step']} ({ss['warmup_steps']} warm-up, "
                   f"{ss['stalls']} stalls excluded); {ss['rule_text']}"
                   + (f" · step time: {ss['step_time_source']}" if ss.get("step_time_source") else ""))
    if pre.warnings:  # written for the command line too: its flags read as the form's selectors
        st.info("\n".join(f"- {_ui.plain(up.for_the_form(w))}" for w in pre.warnings), icon=":material/info:")
    if pre.problems:
        st.caption(_ui.plain(problems_caption(pre)))
        st.dataframe({"line problem": list(pre.problems)}, hide_index=True, height=min(35 * len(pre.problems) + 38, 250))


def problems_caption(pre: PreparedRun) -> str:
    """How many line problems the table lists, and, where more were counted than listed, how many by kind."""
    listed = f"{len(pre.problems):,} line problem{'s' if len(pre.problems) != 1 else ''} listed"
    more = more_problems(pre.problems_left_out)
    return f"{listed} {more}" if more else listed


def limits() -> worker.Limits:
    cfg = _ui.settings()
    return worker.Limits(timeout_s=cfg.ingest_timeout_s, memory_mb=cfg.ingest_memory_mb)


def _db_url(engine: store.Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def prepared_upload(state: MutableMapping[Any, Any], raw: bytes, file_name: str, engine: store.Engine,
                    limit: int, tick: Tick = _quiet, overrides: Mapping[str, Any] | None = None) -> PreparedRun:
    """The upload's prepared run: parsed by a worker process at its first render (tick(seconds) while it works),
    then taken from `state` (the session) on every rerun; a new upload, or new `overrides` (the keyword arguments
    of ingest.hints.hints), replaces (and closes) the one held before. A rerun that interrupts the wait finds the
    same worker in `state` and waits on."""
    digest = hashlib.sha256(raw).hexdigest() + json.dumps(dict(overrides or {}), sort_keys=True)
    held = state.get(HELD)
    if held is not None and held[0] == digest:
        return held[1].run  # type: ignore[no-any-return]
    job = state.get(WORKING)
    if job is None or job[0] != digest:
        drop_held(state)
        job = state[WORKING] = (digest, worker.start_prepare(raw, file_name, _db_url(engine), limit, limits(),
                                                                    overrides))
    try:
        worker.wait(job[1], tick)
    finally:
        if job[1].poll():
            state.pop(WORKING, None)
    prepared = worker.prepared_from(job[1])
    state[HELD] = (digest, prepared)
    return prepared.run


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


TRIES = "wrong_tokens"  # session key of the wrong-token record: {"wrong": n in a row, "until": monotonic time}
BACKOFF_FIRST_S, BACKOFF_MAX_S = 1.0, 30.0


def backoff_s(wrong: int) -> float:
    """The wait before checking the next token after `wrong` wrong ones in a row: 0, 1, 2, 4 ... 30 s."""
    return 0.0 if wrong <= 0 else min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** min(wrong - 1, 16))


def _token_is_right(key: str, typed: str, may_write_with: Callable[[str], bool]) -> bool:
    """Check a typed token, each new wrong one making the session wait longer before its next check (the wait is
    counted down on screen); a rerun with the same wrong token in the box is not a new try; a right one resets."""
    tries = st.session_state.setdefault(TRIES, {"wrong": 0, "until": 0.0})
    seen = hashlib.sha256(typed.encode()).hexdigest()
    if tries.get(key) == seen:
        st.error(f"Wrong upload token ({tries['wrong']} in a row).", icon=":material/lock:")
        return False
    wait = st.empty()
    while (left := tries["until"] - time.monotonic()) > 0:
        wait.caption(f"After {tries['wrong']} wrong tokens, this one is checked in {math.ceil(left)} s.")
        time.sleep(min(1.0, left))
    wait.empty()
    if may_write_with(typed):
        st.session_state[TRIES] = {"wrong": 0, "until": 0.0}
        return True
    tries["wrong"] += 1
    tries["until"] = time.monotonic() + backoff_s(tries["wrong"])
    tries[key] = seen
    st.error(f"Wrong upload token ({tries['wrong']} in a row); the next one is checked after "
             f"{backoff_s(tries['wrong']):g} s.", icon=":material/lock:")
    return False


def token_unlocks_writing(key: str) -> bool:
    """Inside a write panel: True without an upload token, else when the one typed matches (says so if not)."""
    cfg = _ui.settings()  # read on every run: a module is imported once, a page script runs every time
    if not cfg.upload_token:
        return True
    typed = st.text_input("Upload token", type="password", key=key)
    if typed and _token_is_right(key, typed, cfg.may_write_with):
        return True
    st.caption("Writing is protected: enter the upload token.")
    return False


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


def hint_form(page: Page[Any], db: store.Engine, first: up.Choices, digest: str, action: str) -> up.Choices | None:
    """The model, accelerator, devices, precision and seq len selectors, starting from `first`; the choices once
    the form is submitted with the `action` button, else None."""
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
        if not st.form_submit_button(action, key=key("apply")):
            return None
    return up.chosen(model, accelerator, int(devices), precision, int(seq_len))


def restate_panel(page: Page[Any], db: store.Engine, run_id: int, digest: str) -> None:
    """For bytes already stored: the form re-annotates that run from its stored steps and says what changed."""
    row = store.run(db, run_id)
    if row is None:
        return
    if row.format in IMPORTS:
        st.info(f"These bytes are already stored as import {run_id} (the Sources page lists its figures).")
        return
    st.info(f"These bytes are already stored as run {run_id}; the form below updates its annotations and its "
            "figures from its stored steps.")
    first = up.stated(row.config)
    picked = hint_form(page, db, first, digest, f"Update run {run_id}")
    if picked is None:
        return
    try:
        outcome = pipeline.restate(db, run_id, hints_for(db, **up.overrides(first, picked).as_json()))
    except PerfledgerError as exc:
        st.error(_ui.plain(exc), icon=":material/error:")
        return
    st.success(_ui.plain(f"Run {run_id}: {up.changes_text(outcome.hints_changed)}."), icon=":material/edit:")
    for warning in (w for w in outcome.summary.warnings if outcome.hints_changed and "catalog" in w):
        st.warning(_ui.plain(up.for_the_form(warning)))


def upload_panel(page: Page[Any]) -> None:
    """Upload -> preview -> choices -> commit (or re-annotate); hidden when read-only, token-guarded when a token
    is set."""
    cfg, db = _ui.settings(), _ui.engine()
    if cfg.read_only:
        return
    with st.expander("Upload a training log", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing(_ui.key(page, "tok")):
            return
        f = st.file_uploader(f"Megatron, NeMo, DeepSpeed, HF Trainer, torchtitan, MLPerf, TensorBoard, metrics files "
                             f"(JSONL, CSV), console logs… (gzip ok, up to "
                             f"{cfg.max_upload_mb} MB)", key=_ui.key(page, "file"))
        if f is None:
            drop_held(st.session_state)
            st.session_state.pop(STORED, None)
            return
        raw = f.getvalue()
        digest = hashlib.sha256(raw).hexdigest()
        stored = st.session_state.get(STORED)
        if stored is not None and stored[0] == digest:  # just stored: the file stays in the box, unparsed
            restate_panel(page, db, stored[1], digest)
            return
        chosen = _held_for(st.session_state, CHOSEN, digest) or up.Choices()
        tick, done = _progress("Reading the log")
        try:
            pre = prepared_upload(st.session_state, raw, f.name, db, cfg.max_upload_mb * 2**20, tick,
                                  chosen.as_json())
            existing = store.find_run(db, pre.content_sha256)
        except PerfledgerError as exc:  # said inside the panel; the run list below stays on screen
            done()
            st.error(str(exc), icon=":material/error:")
            if isinstance(exc, UnknownFormat | NoKnownNames):  # its names may be mapped to the vocabulary
                _keymap.mapping_panel(page, raw, digest, lambda: drop_held(st.session_state), expanded=True)
            return
        done()
        if _held_for(st.session_state, STATED, digest) is None:
            st.session_state[STATED] = (digest, up.stated(pre.config))  # the first parse: nothing chosen yet
        show_preview(pre)
        if pre.format in MAPPED:
            _keymap.mapping_panel(page, raw, digest, lambda: drop_held(st.session_state))
        if existing is not None:
            restate_panel(page, db, existing, digest)
            return
        if pre.format in IMPORTS:  # published figures, each row with its own model and accelerator
            store_button(page, db, digest)
            return
        stated = _held_for(st.session_state, STATED, digest) or up.Choices()
        picked = hint_form(page, db, stated, digest, "Apply to the preview")
        if picked is not None and up.overrides(stated, picked) != chosen:
            st.session_state[CHOSEN] = (digest, up.overrides(stated, picked))
            st.rerun()
        store_button(page, db, digest)


def store_button(page: Page[Any], db: store.Engine, digest: str) -> None:
    if st.button("Store this run", type="primary", key=_ui.key(page, "commit")):
        store_panel(db, digest)


def _held_for(state: MutableMapping[Any, Any], key: str, digest: str) -> up.Choices | None:
    held = state.get(key)
    return held[1] if held is not None and held[0] == digest else None


def store_panel(db: store.Engine, digest: str) -> None:
    """Store the previewed run and open it; the upload box then offers to re-annotate it (nothing parsed)."""
    tick, done = _progress("Storing the run")
    try:
        saved = store_prepared(st.session_state, db, tick)
    except PerfledgerError as exc:
        done()
        _ui.render_error(exc)
    st.session_state[STORED] = (digest, saved.run_id)
    st.query_params.from_dict({"run": str(saved.run_id)})
    st.rerun()
