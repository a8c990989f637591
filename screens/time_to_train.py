"""Time to train: N tokens on D devices, from a chosen measured row or from a fraction of the dense peak."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

SLUG = "time-to-train"
FORMATS = {"time (s)": "%,.0f", "time (h)": "%,.1f", "time (days)": "%,.2f", "cost (USD)": "$%,.0f", "tokens/s/device": "%,.1f"}
PRESETS = {"GPT-3 175B · 300B tokens · 1024 A800 at 50%": "",
           "Llama 2 70B · 1B tokens · 8 H200 (measured 1880 tok/s)": "m=llama2-70b&tok=1000000000&a=h200&n=8&mode=measured&usd=4"}
db = _ui.engine()
state = _ui.page_state(SLUG)
st.title("Time and cost to train")
_ui.stop_if_empty(db)

links = st.columns(len(PRESETS))
for col, (label, query) in zip(links, PRESETS.items(), strict=True):
    col.page_link("screens/time_to_train.py", label=label, icon=":material/bookmark:",
                  query_params=dict(p.split("=", 1) for p in query.split("&")) if query else {})
c1, c2, c3, c4 = st.columns(4)
state = replace(
    state,
    model=_ui.choose("Model", store.models(db)["id"].to_list(), state.model, key="tt_m", where=c1),
    tokens=float(c2.number_input("Tokens", 1.0, 1e15, state.tokens, step=1e9, format="%.3e", key="tt_tok")),
    accelerator=_ui.choose("Accelerator", store.accelerators(db)["id"].to_list(), state.accelerator, key="tt_a", where=c3),
    devices=int(c4.number_input("Devices", 1, 1_000_000, state.devices, key="tt_n")),
)
c5, c6, c7, c8 = st.columns(4)
mode = c5.radio("Throughput from", ("peak", "measured"), index=("peak", "measured").index(state.mode), key="tt_mode", horizontal=True,
                format_func={"peak": "efficiency × peak", "measured": "a measured row"}.get)
state = replace(state, mode=mode,
                efficiency=float(c6.number_input("Efficiency (fraction of dense peak)", 0.001, 1.0, state.efficiency, step=0.05, key="tt_e",
                                                 disabled=mode != "peak")),
                precision=c7.selectbox("Peak precision", ("fp32", "tf32", "fp16", "bf16", "fp8"), index=("fp32", "tf32", "fp16", "bf16", "fp8").index(state.precision),
                                       key="tt_p", disabled=mode != "peak"),
                usd_per_hour=float(c8.number_input("$ per device-hour (0 = no cost)", 0.0, 1000.0, state.usd_per_hour, step=0.5, key="tt_usd")))
_ui.keep_in_url(state)
st.subheader(state.describe())

table = _ui.compute(SLUG, state, db)
chosen = views.chosen_row(table)
m1, m2, m3 = st.columns(3)
m1.metric("Time to train", f"{chosen['time (days)']:,.1f} days", f"{chosen['time (h)']:,.1f} h", delta_color="off", delta_arrow="off")
m2.metric("Throughput used", f"{chosen['tokens/s/device']:,.0f} tokens/s/device")
m3.metric("Cost", f"${chosen['cost (USD)']:,.0f}" if chosen["cost (USD)"] is not None else "—")
st.caption(chosen["basis"])
st.altair_chart(charts.time_vs_devices(table), width="stretch")
_ui.show_table(table, FORMATS, key="ttt_table")
_ui.download(SLUG, state, db)
row = views.measured_row(state, db) if state.mode == "measured" else None
_ui.show_formula(views.FORMULAS_BY_PAGE[SLUG], views.input_rows(views.ids_frame([row["id"]]), db) if row else None)
