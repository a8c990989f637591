"""The write panels of the Runs page: upload -> preview -> store, and the token guard they share.

An upload is parsed once: the prepared run is kept in the session (under the SHA-256 of the uploaded bytes), so
the reruns Streamlit makes (the click on "Store this run" among them) show it and store it without parsing again.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableMapping  # st.session_state is one, keyed by str or int
from typing import Any

import streamlit as st

from ingest import pipeline
from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.records import PreparedRun, RunConfig, SaveResult
from screens import _ui
from screens._upload_form import annotated_upload

HELD = "ru_prepared"  # session key of (SHA-256 of the uploaded bytes, its PreparedRun)


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def show_preview(pre: PreparedRun) -> None:
    """Format, steps and the steady-state figures the run would be stored with; notes as one list."""
    ss, cfg_ = pre.summary, pre.config
    what = " · ".join(str(cfg_[k]) for k in ("model", "accelerator", "precision") if cfg_.get(k))
    st.markdown(f"**{pre.format}** log · {pre.steps.rows:,} steps · {pre.skipped_lines:,} lines skipped"
                + (f" · {what}" if what else ""))
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
        st.info("\n".join(f"- {w}" for w in pre.warnings), icon=":material/info:")


def prepared_upload(state: MutableMapping[Any, Any], raw: bytes, file_name: str, engine: store.Engine,
                    limit: int) -> PreparedRun:
    """The upload's prepared run: parsed at its first render, then taken from `state` (the session) on every
    rerun; a new upload replaces (and closes) the one held before."""
    digest = hashlib.sha256(raw).hexdigest()
    held = state.get(HELD)
    if held is not None and held[0] == digest:
        return held[1]  # type: ignore[no-any-return]
    drop_held(state)
    prepared = pipeline.prepare(raw, file_name, RunConfig(), engine=engine, limit=limit)
    state[HELD] = (digest, prepared)
    return prepared


def store_prepared(state: MutableMapping[Any, Any], engine: store.Engine, prepared: PreparedRun) -> SaveResult:
    """Store the previewed run as it was prepared, then let it go."""
    saved = store.save_run(engine, prepared)
    drop_held(state)
    return saved


def drop_held(state: MutableMapping[Any, Any]) -> None:
    held = state.pop(HELD, None)
    if held is not None:
        held[1].close()


def token_unlocks_writing(key: str) -> bool:
    """Inside a write panel: True without an upload token, else when the one typed matches (says so if not)."""
    cfg = _ui.settings()  # read on every run: a module is imported once, a page script runs every time
    if cfg.upload_token and not cfg.may_write_with(st.text_input("Upload token", type="password", key=key)):
        st.caption("Writing is protected: enter the upload token.")
        return False
    return True


def upload_panel() -> None:
    """Upload -> preview -> commit; hidden when read-only, token-guarded when a token is set."""
    cfg, db = _ui.settings(), _ui.engine()
    if cfg.read_only:
        return
    with st.expander("Upload a training log", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing("ru_tok"):
            return
        f = st.file_uploader(f"Megatron, NeMo, DeepSpeed, HF Trainer, torchtitan, MLPerf… (gzip ok, up to {cfg.max_upload_mb} MB)", key="ru_file")
        if f is None:
            drop_held(st.session_state)
            return
        try:
            pre = prepared_upload(st.session_state, f.getvalue(), f.name, db, cfg.max_upload_mb * 1024 * 1024)
            pre = annotated_upload(st.session_state, pre, f.getvalue(), f.name, db, cfg.max_upload_mb * 1024 * 1024)
            existing = store.find_run(db, pre.content_sha256)
        except PerfledgerError as exc:  # said inside the panel; the run list below stays on screen
            st.error(str(exc), icon=":material/error:")
            return
        show_preview(pre)
        if existing is not None:
            st.info(f"These bytes are already stored as run {existing}.")
        elif st.button("Store this run", type="primary", key="ru_commit"):
            try:
                saved = store_prepared(st.session_state, db, pre)
            except PerfledgerError as exc:
                _ui.render_error(exc)
            st.query_params.from_dict({"run": str(saved.run_id)})
            st.rerun()
