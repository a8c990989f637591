"""Speedups: candidate vs baseline on the same model and metric; published ratios shown as stored."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from perfledger.calc.flops import FORMULA_TITLES
from screens import _ui

PAGE = _ui.this_page(__file__)
FORMATS = {"speedup (x)": "%.2fx", "baseline value": _ui.AS_STORED, "candidate value": _ui.AS_STORED,
           "baseline TFLOPS/device published": "%.0f", "baseline TFLOPS/device recomputed": "%.1f",
           "candidate TFLOPS/device published": "%.0f", "candidate TFLOPS/device recomputed": "%.1f"}
WIDTHS = {"model": 90, "baseline": 150, "candidate": 150, "speedup (x)": 80, "baseline TFLOPS/device published": 90,
          "candidate TFLOPS/device published": 90, "caveats": 150}  # px: pair, ratio, TFLOPS, caveats, source at 1440px
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Speedups")
_ui.stop_if_empty(db)

preset = st.segmented_control("Comparison", views.SPEEDUP_PRESETS, default=state.preset, key=_ui.key(PAGE, "p"),
                              format_func=views.PRESET_LABELS.__getitem__)
state = replace(state, preset=preset or state.preset)
if state.preset == "custom":
    accs, models = store.accelerators(db)["id"].to_list(), store.models(db)["id"].to_list()
    state = replace(state, models=_ui.choose_many("Models", models, state.models, key=_ui.key(PAGE, "m")),
                    workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w")),
                    metric=_ui.choose("Metric", list(views.METRIC_LABELS), state.metric, key=_ui.key(PAGE, "mt"),
                                      fmt=views.METRIC_LABELS.__getitem__))
    b, c = st.columns(2)
    with b:
        st.markdown("**Baseline**")
        state = replace(state, base_acc=_ui.choose("Accelerator", accs, state.base_acc, key=_ui.key(PAGE, "ba")),
                        base_fw=st.text_input("Framework contains", state.base_fw, key=_ui.key(PAGE, "bf")),
                        base_ver=st.text_input("Framework version contains", state.base_ver, key=_ui.key(PAGE, "bv")),
                        base_strategy=st.text_input("Strategy", state.base_strategy, key=_ui.key(PAGE, "bs")),
                        base_precision=st.text_input("Precision", state.base_precision, key=_ui.key(PAGE, "bp")))
    with c:
        st.markdown("**Candidate**")
        state = replace(state, cand_acc=_ui.choose("Accelerator", accs, state.cand_acc, key=_ui.key(PAGE, "ca")),
                        cand_fw=st.text_input("Framework contains", state.cand_fw, key=_ui.key(PAGE, "cf")),
                        cand_ver=st.text_input("Framework version contains", state.cand_ver, key=_ui.key(PAGE, "cv")),
                        cand_strategy=st.text_input("Strategy", state.cand_strategy, key=_ui.key(PAGE, "cs")),
                        cand_precision=st.text_input("Precision", state.cand_precision, key=_ui.key(PAGE, "cp")))
state = replace(state, formula=_ui.choose("FLOPs formula for recomputed TFLOPS", views.FORMULA_NAMES, state.formula,
                                          key=_ui.key(PAGE, "f"), fmt=lambda f: FORMULA_TITLES.get(f, f)))
_ui.keep_in_url(state)
_ui.describe(state)
_ui.mixed_caveat(state)

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No pair of stored results matches this comparison: widen the filters "
            "(leave a field empty to match anything).")
    st.stop()
if unlike := views.speedups.not_like_for_like(table):
    st.warning("\n".join([_ui.plain(unlike), *(f"- {_ui.plain(c)}" for c in views.caveat_list(table))]),
               icon=":material/warning:")
if (table["kind"] != "computed from two stored results").any():
    st.caption("Rows marked *stored ratio (published)* are ratios the source printed, with its baseline; "
               "no underlying results are stored, so they are not recomputed.")
_ui.implausible(table, db)
_ui.chart(charts.spec(charts.speedup_bars, table), state, "bars")
_ui.show_table(table, FORMATS, key="speedups_table", widths=WIDTHS)
_ui.download(state, table)
_ui.notes(table, db)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                 note=f"TFLOPS recomputed with the '{state.formula}' FLOPs formula at each row's sequence length.")
