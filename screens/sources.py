"""Sources: every source with its kind, date, link and evidence, and the rows it backs."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import names, numbers, urlstate, views
from screens import _ui

PAGE = _ui.this_page(__file__)
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Sources")
_ui.stop_if_empty(db)

if state.result:  # a result's permalink: every field, its source, the audit's verdict, the views showing it
    _ui.keep_in_url(state)
    _ui.describe(state)
    detail = _ui.compute(PAGE, state, db)
    said = dict(zip(detail["field"].to_list(), detail["value"].to_list(), strict=True))  # the last of a repeated field
    value = float(said["value"].replace(",", "")) if said.get("value") else None
    shown = (numbers.figure_text(said["metric"], value, said["unit"]) if value is not None
             else f"{names.metric_name(said['metric'])} = not a number (kept as printed)")
    st.markdown(_ui.plain(f"{shown} · {said['evidence'] or ''} · "
                          f"{said['locator'] or 'no locator'}"))
    if said.get("source_id"):
        _ui.page_link(st, f"Source: {said['source_id']}", views.links.source(said["source_id"]), ":material/menu_book:")
    _ui.web_link(st, said.get("source_url"))
    for field in ("note", "audit explanation"):  # in full: the table's one line cut them at the screen's edge
        for text in detail.filter(detail["field"] == field)["value"].drop_nulls().to_list():
            st.caption(_ui.plain(f"{field.capitalize()}: {names.in_words(text)}"))
    with _ui.answer():
        _ui.show_table(detail, key="sources_result", widths={"field": 180, "value": 760}, height="content")
    shown_in = detail.filter(detail["field"] == "shown in")["value"].to_list()
    st.markdown("**Shown in:** " + (" · ".join(f"[{_ui.plain(h)}]({h})" for h in shown_in) or "no page's table"))
    _ui.download(state, detail, sortable=False)
    st.stop()
all_sources = views.sources.sources(db)
ids = all_sources["id"].to_list()
c1, c2 = st.columns([3, 2])
picked = c1.selectbox("Source", ["", *ids], index=["", *ids].index(state.source) if state.source in ids else 0,
                      key=_ui.key(PAGE, "src"), format_func=lambda s: s or "every source")
state = replace(state, source=picked or ("" if state.source in ids else state.source),
                kinds=tuple(c2.multiselect("Kind", sorted({*all_sources["kind"].to_list(), *state.kinds}),
                                           default=list(state.kinds),
                                           key=_ui.key(PAGE, "k"))))
_ui.keep_in_url(state)
if state.source and state.source not in ids:
    st.warning(_ui.plain(f"There is no source {urlstate.quoted(state.source)}; showing every source."))
    state = replace(state, source="")
_ui.describe(state)

if state.source:
    src = views.source_row(all_sources, state.source)
    st.markdown(f"**{_ui.plain(src['title'])}** — {_ui.plain(src['publisher'] or '')}, {_ui.plain(src['date'] or 'undated')}")
    _ui.web_link(st, src["url"])
    st.caption(_ui.plain(f"Kind: {src['kind']} · Evidence: {src['evidence'] or 'not stated'} · {src['n_results']} result rows"))
table = _ui.compute(PAGE, state, db)
with _ui.answer():
    _ui.show_table(table, ("value",), key="sources_table", results=("id",) if state.source else ())
_ui.download(state, table)

if not state.source:
    imported = views.sources.imports(db)
    st.subheader("Claim imports")
    if imported.height:
        st.caption("Claims files stored with `python -m ingest FILE.csv` or the Runs page's upload: "
                   "one row per file and source, with the rows it stored.")
        _ui.show_table(imported, key="sources_imports")
    else:
        st.caption("No claims file imported yet.")
    unlinked = views.sources.unlinked(db)
    st.subheader("Unlinked names")
    if unlinked.height:
        st.caption("Printed model and accelerator names no catalog row claims: their rows are stored but no figure "
                   "can be recomputed. Link one with the command shown (check the id), or add an alias row.")
        _ui.show_table(unlinked, key="sources_unlinked")
    else:
        st.caption("Every stored model and accelerator name links to the catalog.")
