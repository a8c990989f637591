"""Scaling: throughput vs devices with the ideal line and efficiency; sensitivity studies as stored ratios."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

PAGE = _ui.this_page(__file__)
FORMATS = {"value": "%,.2f", "throughput (tokens/s, all devices)": "%,.0f", "ideal linear (tokens/s)": "%,.0f",
           "scaling efficiency": "percent"}
SECTION_LABELS = {"scaling": "Scaling with devices", "sensitivity": "Sensitivity (seq len, GAS, sparsity, GenSLM)"}
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Scaling and sensitivity")
_ui.stop_if_empty(db)

section = st.segmented_control("Section", views.scaling.SECTIONS, default=state.section, key=_ui.key(PAGE, "s"),
                               format_func=SECTION_LABELS.__getitem__)
c1, c2 = st.columns(2)
state = replace(state, section=section or state.section,
                workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w")),
                models=_ui.choose_many("Models", store.models(db)["id"].to_list(), state.models, key=_ui.key(PAGE, "m")),
                accelerators=_ui.choose_many("Accelerators", store.accelerators(db)["id"].to_list(), state.accelerators,
                                             key=_ui.key(PAGE, "a")))
_ui.keep_in_url(state)
_ui.describe(state)
_ui.mixed_caveat(state)

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No stored rows for this selection; clear a filter.")
    st.stop()
_ui.implausible(table, db)
computed = views.rows_of_kind(table, "computed")
if state.section == "scaling" and computed.height:
    _ui.chart(charts.scaling_lines(views.scaling.points_by_devices(computed)), state, "lines")
stored = views.rows_of_kind(table, "stored")
if stored.height:
    st.markdown("**Stored (published) figures**, each with the baseline the source names")
    chart = charts.efficiency_bars(stored) if state.section == "scaling" else charts.ratio_bars(stored)
    _ui.chart(chart, state, "stored")
_ui.show_table(table, FORMATS, key="scaling_table")
_ui.download(state, table)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                 note="Computed efficiencies use each series' smallest device count as the base; "
                      "stored ones are as published.")
