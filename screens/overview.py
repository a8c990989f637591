"""Overview: what the ledger holds, and headline comparisons that link into the other pages."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

SLUG = "overview"
db = _ui.engine()
state = _ui.page_state(SLUG)
st.title("perfledger")
st.caption("LLM-training performance: vendor claims, papers, MLPerf and our own runs on the same axes, every derived figure recomputed.")
_ui.stop_if_empty(db)

counts = store.counts(db)
cols = st.columns(5)
for col, (label, name) in zip(cols, (("result rows", "result"), ("sources", "source"), ("accelerators", "accelerator"),
                                     ("models", "model"), ("ingested runs", "run")), strict=True):
    col.metric(label, f"{counts.get(name, 0):,}")

st.subheader("Headline comparisons")
left, right = st.columns(2)
for i, (title, slug, query) in enumerate(views.HEADLINES):
    (left if i % 2 == 0 else right).page_link(f"screens/{slug.replace('-', '_')}.py", label=title, icon=":material/arrow_forward:",
                                              query_params=dict(p.split("=", 1) for p in query.split("&")) if query else None)

st.subheader(state.describe())
by = _ui.choose("Group by", ("kind", "accelerator", "model", "metric", "framework"), state.by, key="ov_by")
state = replace(state, by=by)
_ui.keep_in_url(state)
table = _ui.compute(SLUG, state, db)
chart_col, table_col = st.columns([3, 2])
chart_col.altair_chart(charts.count_bars(table, state.by), width="stretch")
with table_col:
    _ui.show_table(table)
    _ui.download(SLUG, state, db)
