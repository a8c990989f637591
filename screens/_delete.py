"""The Runs page's delete panel: a run, its steps and its results, behind the same guards as the upload."""

from __future__ import annotations

from typing import Any

import streamlit as st

from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.views.registry import Page
from screens import _ui
from screens._writes import token_unlocks_writing


def delete_panel(page: Page[Any], run_id: int) -> None:
    """Delete a run (its steps and the results it produced) after a confirmation; same guards as upload."""
    cfg, db = _ui.settings(), _ui.engine()
    if cfg.read_only:
        return
    with st.expander("Delete this run", icon=":material/delete:", expanded=False):
        if not token_unlocks_writing(_ui.key(page, "del_tok")):
            return
        sure = st.checkbox(f"Delete run {run_id}, its steps and the results it produced", key=_ui.key(page, "del_ok"))
        if st.button("Delete", type="primary", disabled=not sure, key=_ui.key(page, "del")):
            try:
                store.delete_run(db, run_id)
            except PerfledgerError as exc:
                _ui.render_error(exc)
            st.query_params.clear()
            st.rerun()
