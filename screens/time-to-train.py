"""Time to train: N tokens on D devices, from a chosen measured row or from a fraction of the dense peak."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, numbers, store, views
from screens import _ui

PAGE = _ui.this_page(__file__)
MODE_LABELS, MODES, PRECISIONS = views.time_to_train.MODE_LABELS, views.time_to_train.MODES, views.time_to_train.PRECISIONS
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Time and cost to train")
_ui.stop_if_empty(db)

for col, preset in zip(st.columns(len(views.links.TIME_TO_TRAIN_PRESETS)), views.links.TIME_TO_TRAIN_PRESETS,
                       strict=True):
    _ui.page_link(col, preset.title, preset.link, ":material/bookmark:")
c1, c2, c3, c4 = st.columns(4)
state = replace(
    state,
    model=_ui.choose("Model", store.models(db)["id"].to_list(), state.model, key=_ui.key(PAGE, "m"), where=c1),
    tokens=_ui.count_input("Tokens (e.g. 300B, 1.2T)", state.tokens, key=_ui.key(PAGE, "tok"), where=c2),
    accelerator=_ui.choose("Accelerator", store.accelerators(db)["id"].to_list(), state.accelerator,
                           key=_ui.key(PAGE, "a"), where=c3),
    devices=int(c4.number_input("Devices", 1, 1_000_000, state.devices, key=_ui.key(PAGE, "n"))),
)
c5, c6, c7, c8 = st.columns(4)
mode = c5.radio(views.time_to_train.MODE_CHOICE, MODES, index=MODES.index(state.mode), key=_ui.key(PAGE, "mode"), horizontal=True,
                format_func=MODE_LABELS.__getitem__)
state = replace(state, mode=mode,
                efficiency=float(c6.number_input("Efficiency (fraction of dense peak)", 0.001, 1.0, state.efficiency,
                                                 step=0.05, key=_ui.key(PAGE, "e"), disabled=mode != "peak")),
                precision=c7.selectbox("Peak precision", PRECISIONS, index=PRECISIONS.index(state.precision),
                                       key=_ui.key(PAGE, "p"), disabled=mode != "peak"),
                usd_per_hour=float(c8.number_input("$ per device-hour (0 = no cost)", 0.0, 1000.0, state.usd_per_hour,
                                                   step=0.5, key=_ui.key(PAGE, "usd"))))
if state.mode == "measured":  # only the stored rows of the chosen model, accelerator and workload, the one used shown
    state = replace(state, workload=_ui.choose_workload(state.workload, key=_ui.key(PAGE, "w")))
    if (refused := views.time_to_train.foreign_row(state, db)) is not None:
        st.warning(_ui.plain(refused[:1].upper() + refused[1:] + "; pick one of the pair's rows below."),
                   icon=":material/warning:")
        state = replace(state, row=0)
    rows = {r["id"]: r for r in views.time_to_train.measured_rows(state, db).iter_rows(named=True)}
    if rows:
        ids = list(rows)
        picked = int(st.selectbox(
            "Measured row (tokens/s/device of this model, accelerator and workload)", ids, key=_ui.key(PAGE, "r"),
            index=ids.index(state.row) if state.row in ids else 0,
            format_func=lambda i: views.time_to_train.measured_label(rows[i])))
        state = replace(state, row=picked if state.row or picked != ids[0] else 0)  # the default row adds no key
_ui.keep_in_url(state)
_ui.describe(state)

table = _ui.compute(PAGE, state, db)
chosen = views.chosen_row(table)
with _ui.answer():
    m1, m2, m3 = st.columns(3)
    m1.metric("Time to train", numbers.text(chosen["time (days)"], "days"), numbers.text(chosen["time (h)"], "h"),
              delta_color="off", delta_arrow="off")
    m2.metric("Throughput used (tokens/s/device)", numbers.text(chosen["tokens/s/device"], stored=state.mode == "measured"))
    m3.metric("Cost (USD)", numbers.text(chosen["cost (USD)"]))
    st.caption(_ui.plain(f"{chosen['basis']}. {views.time_to_train.scaling_sentence(table)}"))
    _ui.chart(charts.spec(charts.time_vs_devices, table), state, "devices")
    _ui.show_table(table, ("tokens/s/device",) if state.mode == "measured" else (), key="ttt_table")
_ui.download(state, table)
_ui.implausible(table, db)  # the measured row's audit warning goes with every estimate made from it
_ui.notes(table, db)
row = views.measured_row(state, db) if state.mode == "measured" else None
_ui.show_formula(PAGE, lambda: views.rows_as_inputs([row]) if row else None)
