"""The page registry: (script, url slug, title, icon) per page; plain data read by app.py and the smoke test.

The page scripts live here in screens/, not in a folder named pages/: Streamlit treats a pages/ folder beside
app.py as legacy folder navigation until st.navigation has run once, so a deep link such as /speedups opened
as the first request after start would run the page without app.py (and show "Page not found").
"""

from __future__ import annotations

from typing import NamedTuple


class PageEntry(NamedTuple):
    file: str
    slug: str
    title: str
    icon: str


PAGES: tuple[PageEntry, ...] = (
    PageEntry("screens/overview.py", "overview", "Overview", ":material/dashboard:"),
    PageEntry("screens/speedups.py", "speedups", "Speedups", ":material/speed:"),
    PageEntry("screens/accelerators.py", "accelerators", "Accelerators", ":material/memory:"),
    PageEntry("screens/scaling.py", "scaling", "Scaling", ":material/trending_up:"),
    PageEntry("screens/time_to_train.py", "time-to-train", "Time to train", ":material/schedule:"),
    PageEntry("screens/runs.py", "runs", "Runs", ":material/monitor_heart:"),
    PageEntry("screens/audit.py", "audit", "Audit", ":material/fact_check:"),
    PageEntry("screens/sources.py", "sources", "Sources", ":material/menu_book:"),
)
DEFAULT_SLUG = "overview"
