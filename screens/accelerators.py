"""Accelerators: one model's figures across hardware, per device, as MFU, per watt or per dollar."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from perfledger.calc.flops import FORMULA_TITLES
from screens import _ui

PAGE = _ui.this_page(__file__)
STORED = ("value", "first value", "second value", "bf16 TFLOPS", "fp16 TFLOPS", "fp8 TFLOPS", "tf32 TFLOPS",
          "fp32 TFLOPS", "memory (GB)", "bandwidth (TB/s)", "TDP (W)")  # catalog and results as stored
HEAD_WIDTHS = {"pair": 140, "model": 90, "metric": 120, "first value": 90, "second value": 90,
               "caveats": 110}  # px: the pair's ratio, both values, the caveats and the source at 1440 px
METRICS = (views.TOKEN_METRIC, views.TFLOPS_METRIC)
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Accelerators")
_ui.stop_if_empty(db)
accs = store.accelerators(db)["id"].to_list()
s1, s2 = st.columns([3, 2])
section = s1.segmented_control("View", views.accelerators.SECTIONS, default=state.section, key=_ui.key(PAGE, "s"),
                               format_func=views.accelerators.SECTION_LABELS.__getitem__)
state = replace(state, section=section or state.section)
if state.section != "catalog":
    state = replace(state, workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w"), where=s2))
if state.section == "head":
    h1, h2 = st.columns([4, 2], vertical_alignment="bottom")
    with h1:
        state = replace(state, accelerators=_ui.choose_many("Accelerators (two or more)", accs, state.accelerators,
                                                            key=_ui.key(PAGE, "acc")))
    state = replace(state, cross_source=h2.toggle("Pair across sources", state.cross_source, key=_ui.key(PAGE, "xs")))
if state.section != "compare":
    _ui.keep_in_url(state)
    _ui.describe(state)
    _ui.mixed_caveat(state)
    table = _ui.compute(PAGE, state, db)
    if state.section == "head" and table.height == 0:
        st.info("No pair of stored results of these accelerators on the same model and metric: add one, pair "
                "across sources, or choose another workload.")
    with _ui.answer():
        for line in views.hardware.summaries(table) if state.section == "head" else []:
            st.markdown(f"- {_ui.plain(line)}")
        if state.section == "head" and table.height:
            _ui.chart(charts.spec(charts.head_to_head_bars, table), state, "pairs")
        _ui.show_table(table, STORED, key=f"accelerators_{state.section}",
                       widths=HEAD_WIDTHS if state.section == "head" else None)
    _ui.download(state, table)
    _ui.implausible(table, db)
    if state.section == "head":
        _ui.notes(table, db)
        _ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                         note="ratio = second / first of each pair (perfledger.calc.metrics.speedup); like for like "
                              "when the two rows agree on precision (stated), devices, framework version, workload, "
                              "sequence length and global batch (perfledger.calc.like_for_like).")
    st.stop()

c1, c2, c3 = st.columns([3, 2, 2])
with c1:
    models = _ui.choose_many("Models", store.models(db)["id"].to_list(), state.models, key=_ui.key(PAGE, "m"))
state = replace(
    state,
    models=models,
    metric=c2.selectbox("Metric", METRICS, index=METRICS.index(state.metric), key=_ui.key(PAGE, "mt"),
                        format_func=views.METRIC_LABELS.__getitem__),
    norm=c3.selectbox("Normalize", views.NORMALIZATIONS, index=views.NORMALIZATIONS.index(state.norm),
                      key=_ui.key(PAGE, "n"), format_func=views.NORM_LABELS.__getitem__),
)
with st.expander("Price, package and FLOPs formula", icon=":material/tune:"):
    c4, c5, c6 = st.columns([2, 2, 3], vertical_alignment="bottom")
    if state.norm == "dollar":  # the only view a price enters; a disabled input on the others was clutter
        state = replace(state, usd_per_hour=float(c4.number_input("$ per device-hour", 0.01, 1000.0, state.usd_per_hour,
                                                                  step=0.25, key=_ui.key(PAGE, "usd"))))
    state = replace(state,
                    per_package=c5.toggle("Per package (MI250: 2 dies)", state.per_package, key=_ui.key(PAGE, "pkg")),
                    formula=c6.selectbox("FLOPs formula (MFU from tokens/s)", views.FORMULA_NAMES,
                                         index=views.FORMULA_NAMES.index(state.formula), key=_ui.key(PAGE, "f"),
                                         format_func=lambda f: FORMULA_TITLES.get(f, f)))
_ui.keep_in_url(state)
_ui.describe(state)
_ui.mixed_caveat(state)
if state.norm == "watt":
    st.caption("Per watt divides by the accelerator's TDP from the catalog, not by measured power draw.")
if state.norm == "dollar":
    st.caption(f"Per dollar uses one price for every accelerator: ${state.usd_per_hour:g} per device-hour.")

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No stored figures for these models and this metric; choose another model.")
    st.stop()
with _ui.answer():
    _ui.chart(charts.spec(charts.accelerator_bars, table, table["normalized unit"][0], _ui.colours()), state, "bars")
    _ui.show_table(table, STORED, key="accelerators_table")
_ui.download(state, table)
_ui.implausible(table, db)
_ui.notes(table, db)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                 note="MFU divides model TFLOPS by the dense peak of the row's precision "
                      "(bf16 when unstated, said in `why`).")
