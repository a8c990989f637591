"""The page scripts. The list of pages is perfledger.views.registry.PAGES (re-exported here for callers that
read it from screens); each script finds its own entry with `_ui.this_page(__file__)`.

The page scripts live here in screens/, not in a folder named pages/: Streamlit treats a pages/ folder beside
app.py as legacy folder navigation until st.navigation has run once, so a deep link such as /speedups opened
as the first request after start would run the page without app.py (and show "Page not found").
"""

from __future__ import annotations

from perfledger.views.registry import DEFAULT_SLUG, PAGES, Page

__all__ = ["DEFAULT_SLUG", "PAGES", "Page"]
