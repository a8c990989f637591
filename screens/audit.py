"""Audit: every TFLOPS claim recomputed from its tokens/s and the model's FLOPs per token, with a verdict."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import store, views
from screens import _ui

PAGE = _ui.this_page(__file__)
FORMATS = {"reported": "%,.1f", "recomputed": "%,.1f", "rel_diff": "percent", "tolerance": "percent",
           "mfu_at_stated_precision": "percent", "tokens_per_s_per_device": "%,.0f"}
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Audit")
_ui.stop_if_empty(db)

c1, c2, c3, c4 = st.columns([2, 3, 3, 2])
with c2:
    sources = _ui.choose_many("Sources", store.sources(db)["id"].to_list(), state.sources, key=PAGE.key("src"))
with c3:
    models = _ui.choose_many("Models", store.models(db)["id"].to_list(), state.models, key=PAGE.key("m"))
state = replace(
    state,
    verdicts=tuple(c1.multiselect("Verdict", views.VERDICTS, default=list(state.verdicts), key=PAGE.key("v"))),
    sources=sources,
    models=models,
    tolerance=float(c4.number_input("Tolerance", 0.0, 1.0, state.tolerance, step=0.01, key=PAGE.key("tol"))),
    workload=_ui.choose_workload(state.workload, key=PAGE.key("w"), where=c1),
)
_ui.keep_in_url(state)
_ui.describe(state)

table = _ui.compute(PAGE, state, db)
counts = views.verdict_counts(table)
cols = st.columns(len(views.VERDICTS))
for col, verdict in zip(cols, views.VERDICTS, strict=True):
    col.metric(verdict, counts.get(verdict, 0))
_ui.show_table(table, FORMATS, key="audit_table")
_ui.download(state, table)
_ui.show_formula(PAGE, note=state.rule().describe())
