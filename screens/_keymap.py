"""The upload panel's mapping of names the key vocabulary does not know: each name the file logs, an example value,
and the step column and unit to read it as. Added rows go to data/metric_keys.csv, checked one by one as
`python -m perfledger keys add` checks them, and the file is read again. Drawn inside the (token-guarded) upload
panel only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ingest.names import unknown_names
from perfledger.errors import DataFileError
from perfledger.metric_keys import COLUMNS, UNITS, KeyRow, add_rows, check_row
from perfledger.views.registry import Page
from screens import _ui

SKIP = "— not read —"
SHOWN = 24  # names offered at once; the rest once these are mapped


def mapping_panel(page: Page[Any], raw: bytes, digest: str, on_added: Callable[[], None], *,
                  expanded: bool = False) -> None:
    """An expander listing the file's unknown names (the first SHOWN), with a column and unit to pick for each."""
    names = unknown_names(raw)[:SHOWN]
    if not names:
        return
    def key(name: str) -> str:
        return _ui.key(page, f"keymap_{name}_{digest[:12]}")

    with st.expander(f"Map names the key vocabulary does not know ({len(names)})", expanded=expanded,
                     icon=":material/table_edit:"), st.form(key("form"), border=False):
        st.caption("Pick the step column each name is (step, step time, loss, tokens ...) and its unit; the rows "
                   "are added to data/metric_keys.csv, as `python -m perfledger keys add` would, and the file is "
                   "read again. A framework named below is read from these names in the files that log them.")
        picked = []
        for i, logged in enumerate(names):
            c = st.columns([3, 2, 3, 2], vertical_alignment="bottom")
            c[0].text_input("name", logged.name, disabled=True, key=key(f"n{i}"), label_visibility="collapsed")
            c[1].caption(_ui.plain(f"e.g. {logged.example}"))
            column = c[2].selectbox(f"column for {logged.name}", [SKIP, *COLUMNS], key=key(f"c{i}"),
                                    label_visibility="collapsed")
            unit = c[3].selectbox(f"unit for {logged.name}", list(UNITS), key=key(f"u{i}"),
                                  format_func=lambda u: u or "no unit", label_visibility="collapsed")
            picked.append((logged.name, column, unit))
        framework = st.text_input("Framework that logs them (optional)", key=key("fw"))
        if st.form_submit_button("Add to the vocabulary and read again"):
            _add(picked, framework.strip(), on_added)


def _add(picked: list[tuple[str, str, str]], framework: str, on_added: Callable[[], None]) -> None:
    rows: list[KeyRow] = []
    try:
        for i, (name, column, unit) in enumerate(picked):
            if column != SKIP:
                fields = {"framework": framework or "*", "key": name, "column": column, "unit": unit,
                          "identifies": "yes" if framework else ""}  # names no row knew: this framework's own
                rows.append(check_row(fields, "the mapping form", i + 1))
        if not rows:
            st.warning("Pick a column for at least one name.")
            return
        path = add_rows(rows)
    except DataFileError as exc:
        st.error(_ui.plain(exc), icon=":material/error:")
        return
    on_added()
    st.toast(_ui.plain(f"{len(rows)} row(s) added to {path}."), icon=":material/check:")
    st.rerun()
