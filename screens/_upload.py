"""The write panels of the Runs page: upload -> preview -> store, and the token guard they share.

An upload is parsed once: the prepared run is kept in the session (under the SHA-256 of the uploaded bytes), so
the reruns Streamlit makes (the click on "Store this run" among them) show it and store it without parsing again.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, MutableMapping  # st.session_state is one, keyed by str or int
from typing import Any

import streamlit as st

from ingest import worker
from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.records import PreparedRun, SaveResult, more_problems
from screens import _ui

HELD = "ru_prepared"  # session key of (SHA-256 of the uploaded bytes, its worker.Prepared)
WORKING = "ru_working"  # session key of (SHA-256 of the uploaded bytes, the worker.Job preparing it)
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
    m = st.columns(5)
    m[0].metric("Steady tokens/s/device", _fmt(ss["tokens_per_s_per_device"], ",.0f"))
    m[1].metric("Model TFLOP/s/device", _fmt(ss["model_tflops_per_device"], ",.1f"))
    m[2].metric("MFU", _fmt(ss["mfu"], ".1%"))
    m[3].metric("Median step time", _fmt(ss["step_time_s_median"], ".3f", " s"))
    m[4].metric("Jitter (CV)", _fmt(ss["jitter_cv"], ".3f"))
    if ss["first_step"] is not None:
        st.caption(f"Steady window: steps {ss['first_step']}–{ss['last_step']} ({ss['warmup_steps']} warm-up, "
                   f"{ss['stalls']} stalls excluded); {ss['rule_text']}")
    if pre.warnings:
        st.info("\n".join(f"- {_ui.plain(w)}" for w in pre.warnings), icon=":material/info:")
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
                    limit: int, tick: Tick = _quiet) -> PreparedRun:
    """The upload's prepared run: parsed by a worker process at its first render (tick(seconds) while it works),
    then taken from `state` (the session) on every rerun; a new upload replaces (and closes) the one held before.
    A rerun that interrupts the wait finds the same worker in `state` and waits on."""
    digest = hashlib.sha256(raw).hexdigest()
    held = state.get(HELD)
    if held is not None and held[0] == digest:
        return held[1].run  # type: ignore[no-any-return]
    job = state.get(WORKING)
    if job is None or job[0] != digest:
        drop_held(state)
        job = state[WORKING] = (digest, worker.start_prepare(raw, file_name, _db_url(engine), limit, limits()))
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


def upload_panel() -> None:
    """Upload -> preview -> commit; hidden when read-only, token-guarded when a token is set."""
    cfg, db = _ui.settings(), _ui.engine()
    if cfg.read_only:
        return
    with st.expander("Upload a training log", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing("ru_tok"):
            return
        f = st.file_uploader(f"Megatron, NeMo, DeepSpeed, HF Trainer, torchtitan, MLPerf… (gzip ok, up to "
                             f"{cfg.max_upload_mb} MB)", key="ru_file")
        if f is None:
            drop_held(st.session_state)
            return
        tick, done = _progress("Reading the log")
        try:
            pre = prepared_upload(st.session_state, f.getvalue(), f.name, db, cfg.max_upload_mb * 2**20, tick)
            existing = store.find_run(db, pre.content_sha256)
        except PerfledgerError as exc:  # said inside the panel; the run list below stays on screen
            done()
            st.error(str(exc), icon=":material/error:")
            return
        done()
        show_preview(pre)
        if existing is not None:
            st.info(f"These bytes are already stored as run {existing}.")
        elif st.button("Store this run", type="primary", key="ru_commit"):
            tick, done = _progress("Storing the run")
            try:
                saved = store_prepared(st.session_state, db, tick)
            except PerfledgerError as exc:
                done()
                _ui.render_error(exc)
            st.query_params.from_dict({"run": str(saved.run_id)})
            st.rerun()
