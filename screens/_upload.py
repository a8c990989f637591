"""The write panels of the Runs page: upload -> preview -> store, and the token guard they share."""

from __future__ import annotations

import streamlit as st

from ingest import pipeline
from perfledger.errors import PerfledgerError
from perfledger.records import RunConfig
from screens import _ui


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def show_preview(pre: pipeline.IngestOutcome) -> None:
    """Format, steps and the steady-state figures the run would be stored with; notes as one list."""
    ss, cfg_ = pre.summary.steady_state_json(), pre.summary.config
    what = " · ".join(str(cfg_[k]) for k in ("model", "accelerator", "precision") if cfg_.get(k))
    st.markdown(f"**{pre.format}** log · {pre.steps:,} steps · {pre.skipped_lines:,} lines skipped" + (f" · {what}" if what else ""))
    m = st.columns(5)
    m[0].metric("Steady tokens/s/device", _fmt(ss["tokens_per_s_per_device"], ",.0f"))
    m[1].metric("Model TFLOP/s/device", _fmt(ss["model_tflops_per_device"], ",.1f"))
    m[2].metric("MFU", _fmt(ss["mfu"], ".1%"))
    m[3].metric("Median step time", _fmt(ss["step_time_s_median"], ".3f", " s"))
    m[4].metric("Jitter (CV)", _fmt(ss["jitter_cv"], ".3f"))
    if ss["first_step"] is not None:
        st.caption(f"Steady window: steps {ss['first_step']}–{ss['last_step']} ({ss['warmup_steps']} warm-up, "
                   f"{ss['stalls']} stalls excluded); {ss['rule_text']}")
    if pre.summary.warnings:
        st.info("\n".join(f"- {w}" for w in pre.summary.warnings), icon=":material/info:")


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
            return
        raw, limit = f.getvalue(), cfg.max_upload_mb * 1024 * 1024
        try:
            pre = pipeline.preview(raw, f.name, RunConfig(), engine=db, limit=limit)
        except PerfledgerError as exc:  # said inside the panel; the run list below stays on screen
            st.error(str(exc), icon=":material/error:")
            return
        show_preview(pre)
        if pre.run_id is not None:
            st.info(f"These bytes are already stored as run {pre.run_id}.")
        elif st.button("Store this run", type="primary", key="ru_commit"):
            try:
                out = pipeline.commit(db, raw, f.name, RunConfig(), limit=limit)
            except PerfledgerError as exc:
                _ui.render_error(exc)
            st.query_params.from_dict({"run": str(out.run_id)})
            st.rerun()
