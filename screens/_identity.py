"""The run page's identity form: model, accelerator, devices, precision, sequence length and batch corrected in
place (ingest.corrections: everything derived recomputed, the correction kept with its time and reason), behind the
same guards as the upload; and the corrections kept for this run."""

from __future__ import annotations

from typing import Any

import streamlit as st
from sqlalchemy import Engine

from ingest.corrections import correct
from perfledger import corrections, store
from perfledger.errors import PerfledgerError
from perfledger.records import RunRow
from perfledger.store.corrections import corrections as stored_corrections
from perfledger.views.registry import Page
from perfledger.vocabulary import PEAK_COLUMN
from screens import _ui
from screens._writes import token_unlocks_writing

COUNTS = ("n_devices", "seq_len", "global_batch", "micro_batch")


def identity_form(page: Page[Any], db: Engine, row: RunRow) -> None:
    """The form in a collapsed panel, with the run's corrections listed under it."""
    kept = stored_corrections(db, row.id)
    for line in st.session_state.pop("identity_corrected", []):
        st.success(_ui.plain(line), icon=":material/check:")
    if _ui.settings().read_only:
        return
    label = f"Correct this run's identity ({kept.height} correction{'s' if kept.height != 1 else ''} kept)"
    with st.expander(label, icon=":material/edit:", expanded=False):
        if token_unlocks_writing(_ui.key(page, "id_tok")):
            _form(page, db, row)
        if kept.height:
            _ui.show_table(kept.drop("run_id"), key=_ui.key(page, "corrections"))


def _form(page: Page[Any], db: Engine, row: RunRow) -> None:
    models, accelerators = store.catalog(db)
    c = row.config
    with st.form(_ui.key(page, "identity"), border=False):
        top = st.columns(3)
        model = _choose(top[0], "Model", models["id"].to_list(), c.get("model"), _ui.key(page, "id_model"))
        acc = _choose(top[1], "Accelerator", accelerators["id"].to_list(), c.get("accelerator"), _ui.key(page, "id_acc"))
        prec = _choose(top[2], "Precision", [p.value for p in PEAK_COLUMN], c.get("precision"), _ui.key(page, "id_prec"))
        counts = st.columns(len(COUNTS))
        numbers = {name: int(col.number_input(corrections.EDITABLE[name][1].capitalize(), min_value=0,
                                              value=int(c.get(name) or 0), key=_ui.key(page, f"id_{name}")))
                   for col, name in zip(counts, COUNTS, strict=True)}
        reason = st.text_input("Reason (kept with the correction)", key=_ui.key(page, "id_reason"))
        if not st.form_submit_button("Correct and recompute", type="primary"):
            return
    values = {k: v for k, v in {"model": model, "accelerator": acc, "precision": prec, **numbers}.items()
              if v and v != c.get(k)}
    if not values:
        st.info("Nothing changed: every field already holds that value.")
        return
    try:
        done = correct(db, row.id, values, reason=reason.strip() or None)
    except PerfledgerError as exc:
        st.error(_ui.plain(exc), icon=":material/error:")
        return
    st.session_state["identity_corrected"] = done.lines()
    st.rerun()  # every figure on the page, and every page, read again: the store's write stamp changed


def _choose(where: Any, label: str, options: list[str], current: Any, key: str) -> str:
    opts = ["", *options] if current in options or not current else ["", str(current), *options]
    return str(where.selectbox(label, opts, index=opts.index(current) if current in opts else 0, key=key,
                               format_func=lambda v: v or "unstated"))
