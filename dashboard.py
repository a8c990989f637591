"""perfledger dashboard: the frame and router, served by app.py (`streamlit run app.py`).

st.navigation runs on every run, before any other output, over the page registry
(perfledger.views.registry.PAGES, read on each run); each page is a thin view in screens/.
"""

from __future__ import annotations

import streamlit as st

from perfledger import store
from perfledger.views import registry
from screens._ui import settings, store_boundary
from screens._writes import follow_upload_limit, writes_refused

st.set_page_config(page_title="perfledger", page_icon=":material/speed:", layout="wide")
st.set_option("client.toolbarMode", "viewer")  # a team dashboard: no Deploy / developer menu
# No table's own CSV download or copy (cells as they are, formulas and all); each table's Download CSV is the safe one
st.set_option("client.disableDataExport", True)

# Streamlit serves its default page at "/" and nowhere else: the default page keeps a visible entry at its own slug
# (/overview, the slug links, README and `export` use), and "/" runs the same script as a hidden page.
home = registry.page(registry.DEFAULT_SLUG)
navigation = st.navigation(
    [st.Page(p.file, title=p.title, icon=p.icon, url_path=p.slug) for p in registry.PAGES]
    + [st.Page(home.file, title=home.title, icon=home.icon, url_path=f"{home.slug}-at-root", default=True,
               visibility="hidden")]
)

with st.sidebar:
    st.caption("Store in use")
    st.text(store.mask_url(settings().db_url))  # st.code loads a syntax highlighter: 0.7 s of every first paint
    if settings().read_only:
        st.badge("read-only", icon=":material/lock:", color="orange")
    elif refused := writes_refused():  # reachable from other machines, no upload token: the browser writes nothing
        st.badge("read-only in the browser", icon=":material/lock:", color="orange")
        st.caption(refused)
    follow_upload_limit()  # Streamlit's upload limit follows PERFLEDGER_MAX_UPLOAD_MB
    st.caption("Every derived figure is recomputed by `perfledger.calc`; each table downloads as CSV.")

# The page's reads share one connection, and the file is free again after it; any store fault is one sentence.
with store.reading(), store_boundary():
    navigation.run()
