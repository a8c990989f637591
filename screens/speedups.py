"""Speedups: candidate vs baseline on the same model and metric; published ratios shown as stored."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

SLUG = "speedups"
FORMATS = {"speedup (x)": "%.1fx", "baseline value": "%,.0f", "candidate value": "%,.0f",
           "baseline TFLOPS/device published": "%.0f", "baseline TFLOPS/device recomputed": "%.1f",
           "candidate TFLOPS/device published": "%.0f", "candidate TFLOPS/device recomputed": "%.1f"}
db = _ui.engine()
state = _ui.page_state(SLUG)
st.title("Speedups")
_ui.stop_if_empty(db)

preset = st.segmented_control("Comparison", views.SPEEDUP_PRESETS, default=state.preset, key="sp_p",
                              format_func=lambda p: {"nemo": "H200 vs A100 (NeMo)", "fsdp": "FSDP vs 3D", "rlhf": "RLHF ± TensorRT-LLM", "custom": "Build your own"}[p])
state = replace(state, preset=preset or state.preset)
if state.preset == "custom":
    accs, models = store.accelerators(db)["id"].to_list(), store.models(db)["id"].to_list()
    state = replace(state, models=_ui.choose_many("Models", models, state.models, key="sp_m"),
                    metric=_ui.choose("Metric", list(views.METRIC_LABELS), state.metric, key="sp_mt", fmt=views.METRIC_LABELS.get))
    b, c = st.columns(2)
    with b:
        st.markdown("**Baseline**")
        state = replace(state, base_acc=_ui.choose("Accelerator", accs, state.base_acc, key="sp_ba"),
                        base_fw=st.text_input("Framework contains", state.base_fw, key="sp_bf"),
                        base_ver=st.text_input("Framework version contains", state.base_ver, key="sp_bv"),
                        base_strategy=st.text_input("Strategy", state.base_strategy, key="sp_bs"),
                        base_precision=st.text_input("Precision", state.base_precision, key="sp_bp"))
    with c:
        st.markdown("**Candidate**")
        state = replace(state, cand_acc=_ui.choose("Accelerator", accs, state.cand_acc, key="sp_ca"),
                        cand_fw=st.text_input("Framework contains", state.cand_fw, key="sp_cf"),
                        cand_ver=st.text_input("Framework version contains", state.cand_ver, key="sp_cv"),
                        cand_strategy=st.text_input("Strategy", state.cand_strategy, key="sp_cs"),
                        cand_precision=st.text_input("Precision", state.cand_precision, key="sp_cp"))
state = replace(state, formula=_ui.choose("FLOPs formula for recomputed TFLOPS", views.FORMULA_NAMES, state.formula, key="sp_f",
                                          fmt=lambda f: views.flops.FORMULA_TITLES.get(f, f)))
_ui.keep_in_url(state)
st.subheader(state.describe())

table = _ui.compute(SLUG, state, db)
if table.height == 0:
    st.info("No pair of stored results matches this comparison: widen the filters (leave a field empty to match anything).")
    st.stop()
caveats = views.caveat_list(table)
if caveats:
    st.warning("Not like for like: " + " · ".join(caveats), icon=":material/warning:")
if (table["kind"] != "computed from two stored results").any():
    st.caption("Rows marked *stored ratio (published)* are ratios the source printed, with its baseline; no underlying results are stored, so they are not recomputed.")
st.altair_chart(charts.speedup_bars(table), width="stretch")
_ui.show_table(table, FORMATS, key="speedups_table")
_ui.download(SLUG, state, db)
_ui.show_formula(views.FORMULAS_BY_PAGE[SLUG], views.input_rows(table, db),
                 note=f"TFLOPS recomputed with the '{state.formula}' FLOPs formula at each row's sequence length.")
