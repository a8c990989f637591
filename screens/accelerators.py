"""Accelerators: one model's figures across hardware, per device, as MFU, per watt or per dollar."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from perfledger.calc.flops import FORMULA_TITLES
from screens import _ui

PAGE = _ui.this_page(__file__)
FORMATS = {"value": "%,.1f", "normalized": "%,.3g", "peak TFLOPS used": "%.1f"}
METRICS = (views.TOKEN_METRIC, views.TFLOPS_METRIC)
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Accelerators")
_ui.stop_if_empty(db)

c1, c2, c3 = st.columns([3, 2, 2])
with c1:
    models = _ui.choose_many("Models", store.models(db)["id"].to_list(), state.models, key=PAGE.key("m"))
state = replace(
    state,
    models=models,
    metric=c2.selectbox("Metric", METRICS, index=METRICS.index(state.metric), key=PAGE.key("mt"),
                        format_func=views.METRIC_LABELS.__getitem__),
    norm=c3.selectbox("Normalize", views.NORMALIZATIONS, index=views.NORMALIZATIONS.index(state.norm),
                      key=PAGE.key("n"), format_func=views.NORM_LABELS.__getitem__),
)
c4, c5, c6 = st.columns([2, 2, 3])
state = replace(state,
                usd_per_hour=float(c4.number_input("$ per device-hour", 0.01, 1000.0, state.usd_per_hour, step=0.25,
                                                   key=PAGE.key("usd"), disabled=state.norm != "dollar")),
                per_package=c5.toggle("Per package (MI250: 2 dies)", state.per_package, key=PAGE.key("pkg")),
                formula=c6.selectbox("FLOPs formula (MFU from tokens/s)", views.FORMULA_NAMES,
                                     index=views.FORMULA_NAMES.index(state.formula), key=PAGE.key("f"),
                                     format_func=lambda f: FORMULA_TITLES.get(f, f)))
_ui.keep_in_url(state)
_ui.describe(state)
if state.norm == "watt":
    st.caption("Per watt divides by the accelerator's TDP from the catalog, not by measured power draw.")
if state.norm == "dollar":
    st.caption(f"Per dollar uses one price for every accelerator: ${state.usd_per_hour:g} per device-hour.")

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No stored figures for these models and this metric; choose another model.")
    st.stop()
st.altair_chart(charts.accelerator_bars(table, table["normalized unit"][0]), width="stretch")
_ui.show_table(table, FORMATS, key="accelerators_table")
_ui.download(state, table)
_ui.show_formula(PAGE, views.input_rows(table, db),
                 note="MFU divides model TFLOPS by the dense peak of the row's precision "
                      "(bf16 when unstated, said in `why`).")
