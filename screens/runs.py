"""Runs: ingested logs, one run's steps and steady state, two runs compared, and upload."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from perfledger.errors import PerfledgerError
from screens import _ui
from screens._upload import token_unlocks_writing, upload_panel

PAGE = _ui.this_page(__file__)
FORMATS = {"tokens_per_s_per_device": "%,.0f", "model_tflops_per_device": "%.1f", "mfu": "percent",
           "jitter_cv": "%.3f", "step_time_s_median": "%.3f"}
db = _ui.engine()
state = _ui.page_state(PAGE)
cfg = _ui.settings()
st.title("Runs")


def delete_panel(run_id: int) -> None:
    """Delete a run (its steps and the results it produced) after a confirmation; same guards as upload."""
    if cfg.read_only:
        return
    with st.expander("Delete this run", icon=":material/delete:", expanded=False):
        if not token_unlocks_writing(PAGE.key("del_tok")):
            return
        sure = st.checkbox(f"Delete run {run_id}, its steps and the results it produced", key=PAGE.key("del_ok"))
        if st.button("Delete", type="primary", disabled=not sure, key=PAGE.key("del")):
            try:
                store.delete_run(db, run_id)
            except PerfledgerError as exc:
                _ui.render_error(exc)
            st.query_params.clear()
            st.rerun()


upload_panel()
_ui.stop_if_empty(db)
runs = _ui.compute(PAGE, replace(state, run=0, vs=0), db)
if runs.height == 0:
    st.info("No runs ingested yet: upload a log above, or run `python -m ingest FILE` on the cluster.")
    st.stop()

if not state.run:
    _ui.describe(state)
    _ui.show_table(runs, FORMATS, key="runs_table")
    st.caption("Open a run (its link is ?run=ID):")
    for rid, name, fmt in runs.select("id", "file_name", "format").head(20).iter_rows():
        _ui.page_link(st, f"Run {rid} · {name} ({fmt})", views.links.run(rid), ":material/open_in_new:")
    _ui.download(state, runs)
    st.stop()

ids = runs["id"].to_list()
names = {rid: f"#{rid} · {name} ({fmt})" for rid, name, fmt in runs.select("id", "file_name", "format").iter_rows()}
c1, c2, c3, c4 = st.columns(4)
state = replace(state,
                run=int(c1.selectbox("Run", ids, index=ids.index(state.run) if state.run in ids else 0,
                                     key=PAGE.key("run"), format_func=names.__getitem__)),
                vs=int(c2.selectbox("Compare with", [0, *ids], index=([0, *ids].index(state.vs) if state.vs in ids else 0),
                                    key=PAGE.key("vs"), format_func=lambda i: "—" if i == 0 else names[i])),
                warmup_fraction=float(c3.slider("Warm-up fraction", 0.0, 0.5, state.warmup_fraction, 0.01,
                                                key=PAGE.key("wf"))))
state = replace(state, first=int(c4.number_input("Window first step (-1 = rule)", -1, value=state.first,
                                                 key=PAGE.key("w0"))))
_ui.keep_in_url(state)
_ui.describe(state)

steps = _ui.compute(PAGE, state, db)
if steps.height == 0:  # a run whose log held no step lines: nothing to summarise or draw, but it can be deleted
    st.info(f"Run {state.run} has no steps stored, so it has no steady state and no step charts.")
    delete_panel(state.run)
    st.stop()
summary = views.run_summary(state, steps)
m = st.columns(4)
m[0].metric("Steady steps", f"{summary.steps_in_window:,}", f"{summary.warmup_steps} warm-up · {summary.stalls} stalls",
            delta_color="off", delta_arrow="off")
m[1].metric("Median step time", f"{summary.step_time_s_median:.3f} s" if summary.step_time_s_median else "—")
m[2].metric("Jitter (CV)", f"{summary.jitter_cv:.3f}" if summary.jitter_cv is not None else "—")
m[3].metric("Tokens/s (all devices)", f"{summary.tokens_per_s:,.0f}" if summary.tokens_per_s else "—")
st.caption(summary.rule.describe())
st.altair_chart(charts.step_times(steps), width="stretch")
st.altair_chart(charts.loss_curve(steps), width="stretch")
st.markdown("**Nearest published claims** for the same model and accelerator")
claims = views.nearest_claims(db, state.run)
if claims.height:
    _ui.show_table(claims, key="runs_claims")
else:
    st.caption("No published claim in the ledger for this run's model and accelerator (or the log names neither: "
               "ingest it again with --model and --accelerator).")
if state.vs:
    st.markdown(f"**Config diff: run {state.run} vs run {state.vs}**")
    _ui.show_table(views.config_diff(db, state.run, state.vs), key="runs_diff")
_ui.download(state, steps)
_ui.show_formula(PAGE)
delete_panel(state.run)
