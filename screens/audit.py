"""Audit: every claim (TFLOPS, MFU/HFU, time to train, scaling) recomputed from its own inputs, with a verdict."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import store, views
from perfledger.errors import PerfledgerError
from screens import _ui

PAGE = _ui.this_page(__file__)
STORED = ("reported",)  # the claim as its source printed it
WIDTHS = {"claim_id": 60, "metric": 150, "reported": 80, "recomputed": 90, "rel_diff": 80, "verdict": 100,
          "explanation": 200}  # px: the claim, its figures, verdict, why and source fit at 1440px
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Audit")
_ui.stop_if_empty(db)

c1, c2, c3, c4 = st.columns([2, 3, 3, 2])
with c2:
    sources = _ui.choose_many("Sources", store.sources(db)["id"].to_list(), state.sources, key=_ui.key(PAGE, "src"))
with c3:
    models = _ui.choose_many("Models", store.models(db)["id"].to_list(), state.models, key=_ui.key(PAGE, "m"))
state = replace(
    state,
    verdicts=tuple(c1.multiselect("Verdict", views.VERDICTS, default=list(state.verdicts), key=_ui.key(PAGE, "v"))),
    sources=sources,
    models=models,
    tolerance=round(float(c4.number_input("Tolerance (%)", 0.0, 100.0, round(state.tolerance * 100, 9), step=1.0,
                                          key=_ui.key(PAGE, "tol"))) / 100, 12),  # read in %; the URL keeps the fraction
    workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w"), where=c1),
    cross_source=c4.toggle("Other sources too", state.cross_source, key=_ui.key(PAGE, "xs"),
                           help="also check a claim against other sources' figures of the same configuration"),
)
_ui.keep_in_url(state)
_ui.describe(state)

table = _ui.compute(PAGE, state, db)
counts = views.verdict_counts(table)
with _ui.answer():
    cols = st.columns(len(views.VERDICTS))
    for col, verdict in zip(cols, views.VERDICTS, strict=True):
        col.metric(verdict, counts.get(verdict, 0))
    _ui.show_table(views.with_input_rows(table), STORED, key="audit_table", first=views.audit.SHOWN_FIRST,
                   widths=WIDTHS)  # inputs: Sources links
_ui.download(state, table)
_ui.show_formula(PAGE, note=state.rule().describe())

try:
    queue = views.audit.to_resolve(db)
except PerfledgerError as exc:
    _ui.render_error(exc)
st.subheader(f"To resolve ({queue.height})", anchor=False)
st.caption("Cells and names imports kept as printed because perfledger cannot read them yet: their rows are stored, "
           "but the audit cannot check them. One answer resolves every row that prints the cell and every later "
           "import (saved in data/resolutions.csv); run the command shown.")
_ui.show_table(queue, key="resolve_table", first=("field", "printed", "rows", "reason", "suggestion", "command"))
