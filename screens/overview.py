"""Overview: what the ledger holds, and headline comparisons that link into the other pages."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, store, views
from screens import _ui

PAGE = _ui.this_page(__file__)
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("perfledger")
st.caption("LLM-training performance: vendor claims, papers, MLPerf and our own runs on the same axes, "
           "every derived figure recomputed.")
_ui.stop_if_empty(db)

counts = store.counts(db)
cols = st.columns(5)
COUNTED = (("result rows", "result"), ("sources", "source"), ("accelerators", "accelerator"), ("models", "model"),
           ("ingested runs", "run"))
for col, (label, name) in zip(cols, COUNTED, strict=True):
    col.metric(label, f"{counts.get(name, 0):,}")

st.subheader("Headline comparisons")
left, right = st.columns(2)
for i, headline in enumerate(views.HEADLINES):
    _ui.page_link(left if i % 2 == 0 else right, headline.title, headline.link, ":material/arrow_forward:")

_ui.describe(state)
by = _ui.choose("Group by", views.overview.GROUPINGS, state.by, key=_ui.key(PAGE, "by"))
state = replace(state, by=by)
_ui.keep_in_url(state)
table = _ui.compute(PAGE, state, db)
chart_col, table_col = _ui.answer().columns(2)  # the table whole: its name and three counts need ~430 px
_ui.chart(charts.spec(charts.count_bars, table, state.by), state, "counts", where=chart_col)
with table_col:
    # the group's name whole ("measured from 19 ingested runs" was cut), the counts narrow beside it
    _ui.show_table(table, widths={table.columns[0]: 200} | {c: "small" for c in table.columns[1:]})
    _ui.download(state, table)
