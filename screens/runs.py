"""Runs: ingested logs; one run explored (its verdict first, configuration, per-step figures, steady window) or
several overlaid."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, views
from perfledger.views import runs as rv
from screens import _ui
from screens._delete import delete_panel
from screens._identity import identity_form
from screens._mlperf import show_headline
from screens._run_steps import show_claims, show_steady
from screens._upload import upload_panel
from screens._verdict import show_verdict

PAGE = _ui.this_page(__file__)
FORMATS = {"tokens_per_s_per_device": "%,.0f", "model_tflops_per_device": "%.1f", "mfu": "percent", "jitter_cv": "%.3f",
           "step_time_s_median": "%.3f", "value": _ui.AS_STORED, "printed": _ui.AS_STORED, "recomputed": "%,.6g",
           "relative_difference": "percent"}
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Runs")


upload_panel(PAGE)
_ui.stop_if_empty(db)
runs = _ui.compute(PAGE, replace(state, run=0, vs=()), db, sortable=not state.run)
if runs.height == 0:
    st.info("No runs ingested yet: upload a log above, or run `python -m ingest FILE` on the cluster.")
    st.stop()

if not state.run:
    _ui.describe(state)
    _ui.show_table(runs, FORMATS, key=_ui.key(PAGE, "table"))
    st.caption("Open a run (its link is ?run=ID):")
    for rid, name, fmt in runs.select("id", "file_name", "format").head(20).iter_rows():
        _ui.page_link(st, f"Run {rid} · {name} ({fmt})", views.links.run(rid), ":material/open_in_new:")
    _ui.download(state, runs)
    st.stop()

ids = runs["id"].to_list()
if state.run not in ids:
    _ui.compute(PAGE, state, db, sortable=False)  # a run that does not exist is said as an error
    st.info(_ui.plain(rv.unlisted_note(db, state.run)), icon=":material/info:")
    st.stop()
verdict_box = st.container()  # first on the page, filled once the controls below have settled the state
names = {rid: f"#{rid} · {name} ({fmt})" for rid, name, fmt in runs.select("id", "file_name", "format").iter_rows()}
c1, c2, c3, c4, c5 = st.columns([3, 3, 2, 2, 2])
run_id = int(c1.selectbox("Run", ids, index=ids.index(state.run) if state.run in ids else 0, key=_ui.key(PAGE, "run"),
                          format_func=names.__getitem__))
vs = c2.multiselect("Overlay with", [i for i in ids if i != run_id], default=[i for i in state.compared() if i in ids],
                    key=_ui.key(PAGE, "vs"), format_func=names.__getitem__)
state = replace(state, run=run_id, vs=tuple(str(i) for i in vs if i != run_id),
                x=str(c3.segmented_control("Overlay by", rv.X_AXES, default=state.x, key=_ui.key(PAGE, "x")) or state.x),
                warmup_fraction=float(c4.slider("Warm-up fraction", 0.0, 0.5, state.warmup_fraction, 0.01,
                                                key=_ui.key(PAGE, "wf"))),
                first=int(c5.number_input("Window first step (-1 = rule)", -1, value=state.first, key=_ui.key(PAGE, "w0"))))
_ui.keep_in_url(state)
with verdict_box:
    show_verdict(db, state.run, state)

steps = _ui.compute(PAGE, state, db, sortable=False)
row = rv.stored_run(db, state.run)
st.subheader(_ui.plain(f"Run {row.id} · {row.file_name}"))
st.markdown(rv.header_table(row, _ui.plain))
st.caption(_ui.plain(f"{row.format} log · {row.n_steps:,} steps · {row.skipped_lines:,} lines skipped"))
identity_form(PAGE, db, row)
summary = rv.page_summary(state, db, steps)
if (note := rv.long_run_note(row)) is not None:
    st.caption(note)
figures = rv.run_figures(db, row)
headlined = show_headline(db, row, figures, FORMATS)  # an MLPerf result: its time to train and the submission
if summary is None and not headlined:
    st.info("This run has no timed steps (a result file or a summary): its stored figures follow, time to train "
            "first; 'derived' marks a figure computed from the ones the file states.", icon=":material/info:")
    _ui.show_table(figures, FORMATS, key=_ui.key(PAGE, "figures"))
elif summary is not None:
    show_steady(db, row, summary, steps, state, FORMATS, PAGE)
if state.compared():
    both = rv.overlay_steps(state, db, steps)
    st.markdown(f"**{state.describe()}**, by {state.x}")
    grid = st.columns(2)
    for i, ch in enumerate(c for c in rv.STEP_CHARTS if rv.drawable(both, c)):
        _ui.chart(charts.spec(charts.overlay, both, ch.column, state.x, ch.title, ch.axis, fmt=ch.fmt), state,
                  f"overlay-{ch.column}", where=grid[i % 2])
    st.markdown("**Config diff**")
    _ui.show_table(views.config_diff(db, state.run, *state.compared()), key=_ui.key(PAGE, "diff"))
if summary is not None and figures.height and not headlined:
    with st.expander("Figures stored for this run"):
        _ui.show_table(figures, FORMATS, key=_ui.key(PAGE, "figures"))
show_claims(db, state.run, FORMATS)
_ui.download(state, steps)
_ui.show_formula(PAGE)
delete_panel(PAGE, state.run)
