"""Runs: ingested logs; one run explored (its verdict first, configuration, per-step figures, steady window) or
several overlaid."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import views
from perfledger.views import runs as rv
from screens import _run_charts, _ui
from screens._delete import delete_panel
from screens._identity import identity_form
from screens._mlperf import show_headline
from screens._run_steps import show_claims, show_steady
from screens._upload import upload_panel
from screens._verdict import show_verdict

PAGE = _ui.this_page(__file__)
STORED = ("value", "printed", "time_to_train_s")  # a figure as the file or a source printed it
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Runs")


upload_panel(PAGE)
_ui.stop_if_empty(db)
runs = _ui.compute(PAGE, replace(state, run=0, vs=()), db)
if runs.height == 0:
    st.info("No runs ingested yet: upload a log above, or run `python -m ingest FILE` on the cluster.")
    st.stop()
ids = runs["id"].to_list()
if state.run and state.run not in ids:  # a run never ingested or deleted, or an import of claims: said, then the list
    st.info(_ui.plain(rv.unlisted_note(db, state.run)), icon=":material/info:")
    state = replace(state, run=0, vs=())

if not state.run:
    _ui.describe(state)
    with _ui.answer():
        _ui.show_table(runs, STORED, key=_ui.key(PAGE, "table"), widths={"mfu": 90, "file_name": 220})
    _ui.download(state, runs)
    st.caption("Open a run (its link is ?run=ID):")
    for rid, name, fmt in runs.select("id", "file_name", "format").head(20).iter_rows():
        _ui.page_link(st, f"Run {rid} · {name} ({fmt})", views.links.run(rid), ":material/open_in_new:")
    st.stop()

verdict_box = _ui.answer()  # first on the page, filled once the controls below have settled the state
labels = {rid: f"#{rid} · {name} ({fmt})" for rid, name, fmt in runs.select("id", "file_name", "format").iter_rows()}
c1, c2 = st.columns([2, 3])
run_id = int(c1.selectbox("Run", ids, index=ids.index(state.run) if state.run in ids else 0, key=_ui.key(PAGE, "run"),
                          format_func=labels.__getitem__))
vs = c2.multiselect("Overlay with", [i for i in ids if i != run_id], default=[i for i in state.compared() if i in ids],
                    key=_ui.key(PAGE, "vs"), format_func=labels.__getitem__)
c3, c4, c5, c6 = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
state = replace(state, run=run_id, vs=tuple(str(i) for i in vs if i != run_id),
                x=str(c3.segmented_control("Overlay by", rv.X_AXES, default=state.x, key=_ui.key(PAGE, "x")) or state.x),
                warmup_fraction=float(c4.slider("Warm-up fraction", 0.0, 0.5, state.warmup_fraction, 0.01,
                                                key=_ui.key(PAGE, "wf"))),
                first=int(c5.number_input("Window first step (-1 = rule)", -1, value=state.first, key=_ui.key(PAGE, "w0"))),
                log=bool(c6.toggle("Log scale", state.log, key=_ui.key(PAGE, "log"), help="the charts' y axes")))
_ui.keep_in_url(state)
with verdict_box:
    show_verdict(db, state.run, state)

steps = _ui.compute(PAGE, state, db)
row = rv.stored_run(db, state.run)
st.subheader(_ui.plain(f"Run {row.id} · {row.file_name}"))
st.markdown(rv.header_table(row, _ui.plain))
st.caption(_ui.plain(f"{row.format} log · {row.n_steps:,} steps · {row.skipped_lines:,} lines skipped"))
identity_form(PAGE, db, row)
summary = rv.page_summary(state, db, steps)
if (note := rv.long_run_note(row)) is not None:
    st.caption(note)
figures = rv.run_figures(db, row)
headlined = show_headline(db, row, figures, STORED)  # an MLPerf result: its time to train and the submission
if summary is None and not headlined:
    st.info("This run has no timed steps (a result file or a summary): its stored figures follow, time to train "
            "first; 'derived' marks a figure computed from the ones the file states.", icon=":material/info:")
    _ui.show_table(figures, STORED, key=_ui.key(PAGE, "figures"))
elif summary is not None:
    show_steady(db, row, summary, steps, state, STORED, PAGE)
if state.compared():
    both = rv.overlay_steps(state, db, steps)
    st.markdown(f"**{state.describe()}**, by {state.x}")
    _run_charts.overlaid(state, both, rv.run_label(row))
    st.markdown("**Config diff**")
    _ui.show_table(views.config_diff(db, state.run, *state.compared()), key=_ui.key(PAGE, "diff"), widths={"key": 300})
if summary is not None and figures.height and not headlined:
    with st.expander("Figures stored for this run"):
        _ui.show_table(figures, STORED, key=_ui.key(PAGE, "figures"))
show_claims(db, state.run, STORED)
_ui.download(state, steps, sortable=False)
_ui.show_formula(PAGE)
delete_panel(PAGE, state.run)
