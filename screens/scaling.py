"""Scaling: throughput vs devices with the ideal line and efficiency; sensitivity studies as stored ratios."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

PAGE = _ui.this_page(__file__)
STORED = ("value",)  # a published ratio or efficiency, as printed
SECTION_LABELS = {"scaling": "Scaling with devices", "sensitivity": "Sensitivity (seq len, GAS, sparsity, GenSLM)"}
CHARTS, CHART_LABELS = views.scaling.CHARTS, views.scaling.CHART_LABELS
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Scaling and sensitivity")
_ui.stop_if_empty(db)

s1, s2 = st.columns(2)
section = s1.segmented_control("Section", views.scaling.SECTIONS, default=state.section, key=_ui.key(PAGE, "s"),
                               format_func=SECTION_LABELS.__getitem__)
state = replace(state, section=section or state.section)
if state.section == "scaling":
    chart = s2.segmented_control("Chart", CHARTS, default=state.chart, key=_ui.key(PAGE, "c"),
                                 format_func=CHART_LABELS.__getitem__)
    state = replace(state, chart=chart or state.chart)
with st.expander(_ui.plain(views.scaling.filters_label(state)), icon=":material/filter_list:"):
    state = replace(state, workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w")),
                    models=_ui.choose_many("Models", store.models(db)["id"].to_list(), state.models,
                                           key=_ui.key(PAGE, "m")),
                    accelerators=_ui.choose_many("Accelerators", store.accelerators(db)["id"].to_list(),
                                                 state.accelerators, key=_ui.key(PAGE, "a")))
_ui.keep_in_url(state)
_ui.describe(state)
_ui.mixed_caveat(state)

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No stored rows for this selection; clear a filter.")
    st.stop()
computed, stored = views.rows_of_kind(table, "computed"), views.rows_of_kind(table, "stored")
with _ui.answer():
    if state.section == "sensitivity" and stored.height:
        _ui.chart(charts.spec(charts.ratio_bars, stored, _ui.colours()), state, "stored")
    if state.section == "scaling" and state.chart == "computed":
        if computed.height:
            _ui.chart(charts.spec(charts.scaling_lines, views.scaling.chart_points(table)), state, "lines")
        else:
            st.info("No series to draw: a series is one source, model, workload, precision and strategy measured at "
                    "two or more device counts. The published efficiencies are under Chart above.")
    if state.section == "scaling" and state.chart == "stored":
        if stored.height:
            st.caption("Stored (published) figures, each with the baseline the source names.")
            _ui.chart(charts.spec(charts.efficiency_bars, stored, _ui.colours()), state, "stored")
        else:
            st.info("No published scaling efficiency for this selection.")
    _ui.show_table(table, STORED, key="scaling_table")
_ui.download(state, table)
_ui.implausible(table, db)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                 note="Computed efficiencies use each series' smallest device count as the base; "
                      "stored ones are as published.")
