"""Speedups: candidate vs baseline on the same model and metric; published ratios shown as stored."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from perfledger import charts, store, views
from perfledger.calc.flops import FORMULA_TITLES
from screens import _ui

PAGE = _ui.this_page(__file__)
SIDE_TITLES = {"base": "Baseline", "cand": "Candidate"}
STORED = ("baseline value", "candidate value", "baseline TFLOPS/device published", "candidate TFLOPS/device published")
WIDTHS = {"model": 90, "baseline": 150, "candidate": 150, "speedup (x)": 90, "caveats": 150}  # px: the pair, its ratio, caveats, source
db = _ui.engine()
state = _ui.page_state(PAGE)


def side_filters(state: views.SpeedupView, side: str, where: Any) -> views.SpeedupView:
    """One side's filters of a custom comparison (fields `{side}_acc`, `_fw`, `_ver`, `_strategy`, `_precision`)."""
    where.markdown(f"**{SIDE_TITLES[side]}**")
    accs = store.accelerators(db)["id"].to_list()
    acc = _ui.choose("Accelerator", accs, getattr(state, f"{side}_acc"), key=_ui.key(PAGE, f"{side}_acc"), where=where)
    texts = {field: where.text_input(label, getattr(state, f"{side}_{field}"), key=_ui.key(PAGE, f"{side}_{field}"))
             for field, label in (("fw", "Framework contains"), ("ver", "Framework version contains"),
                                  ("strategy", "Strategy"), ("precision", "Precision"))}
    return replace(state, **{f"{side}_acc": acc, **{f"{side}_{f}": v for f, v in texts.items()}})


st.title("Speedups")
_ui.stop_if_empty(db)

preset = st.segmented_control("Comparison", views.SPEEDUP_PRESETS, default=state.preset, key=_ui.key(PAGE, "p"),
                              format_func=views.PRESET_LABELS.__getitem__)
state = replace(state, preset=preset or state.preset)
with st.expander("Build your own comparison" if state.preset == "custom" else "FLOPs formula of the recomputed TFLOPS",
                 expanded=state.preset == "custom", icon=":material/tune:"):
    if state.preset == "custom":
        models = store.models(db)["id"].to_list()
        state = replace(state, models=_ui.choose_many("Models", models, state.models, key=_ui.key(PAGE, "m")),
                        workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w")),
                        metric=_ui.choose("Metric", list(views.METRIC_LABELS), state.metric, key=_ui.key(PAGE, "mt"),
                                          fmt=views.METRIC_LABELS.__getitem__))
        for side, where in zip(("base", "cand"), st.columns(2), strict=True):
            state = side_filters(state, side, where)
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
    st.warning(_ui.plain(f"{unlike}: the caveats are listed under the table."), icon=":material/warning:")
with _ui.answer():
    _ui.chart(charts.spec(charts.speedup_bars, table), state, "bars")
    _ui.show_table(table, STORED, key="speedups_table", widths=WIDTHS)
_ui.download(state, table)
if unlike:
    with st.expander(f"Caveats: {unlike.lower()}", icon=":material/warning:"):
        st.markdown("\n".join(f"- {_ui.plain(c)}" for c in views.caveat_list(table)))
if (table["kind"] != "computed from two stored results").any():
    st.caption("Rows marked *stored ratio (published)* are ratios the source printed, with its baseline; "
               "no underlying results are stored, so they are not recomputed.")
_ui.implausible(table, db)
_ui.notes(table, db)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db),
                 note=f"TFLOPS recomputed with the '{state.formula}' FLOPs formula at each row's sequence length.")
