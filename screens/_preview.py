"""What the upload panel shows of a prepared upload before it is stored: a log's format, steps and steady-state
figures with its notes; a claims file's rows to add, update and refuse and the names it would leave unlinked."""

from __future__ import annotations

import streamlit as st

from ingest import worker
from perfledger.records import PreparedRun, more_problems
from perfledger.views import upload as up
from screens import _ui

__all__ = ["problems_caption", "show_claims_preview", "show_preview"]


def show_preview(pre: PreparedRun) -> None:
    """Format, steps and the steady-state figures the run would be stored with; notes as one list."""
    ss, cfg_ = pre.summary, pre.config
    what = " · ".join(str(cfg_[k]) for k in ("model", "accelerator", "precision") if cfg_.get(k))
    st.markdown(f"**{pre.format}** log · {pre.steps.rows:,} steps · {pre.skipped_lines:,} lines skipped"
                + (f" · {_ui.plain(what)}" if what else ""))  # names as the log printed them: shown as text
    for column, figure in zip(st.columns(5), up.preview_figures(pre.format, cfg_, ss, pre.results), strict=True):
        column.metric(figure.label, figure.text, help=figure.help or None)
    if ss["first_step"] is not None:
        st.caption(f"Steady window: steps {ss['first_step']}–{ss['last_step']} ({ss['warmup_steps']} warm-up, "
                   f"{ss['stalls']} stalls excluded); {ss['rule_text']}"
                   + (f" · step time: {ss['step_time_source']}" if ss.get("step_time_source") else ""))
    if pre.warnings:  # written for the command line too: its flags read as the form's selectors
        st.info("\n".join(f"- {_ui.plain(up.for_the_form(w))}" for w in pre.warnings), icon=":material/info:")
    if pre.problems:
        st.caption(_ui.plain(problems_caption(pre)))
        st.dataframe({"line problem": list(pre.problems)}, hide_index=True, height=min(35 * len(pre.problems) + 38, 250))


def problems_caption(pre: PreparedRun) -> str:
    """How many line problems the table lists, and, where more were counted than listed, how many by kind."""
    listed = f"{len(pre.problems):,} line problem{'s' if len(pre.problems) != 1 else ''} listed"
    more = more_problems(pre.problems_left_out)
    return f"{listed} {more}" if more else listed


def show_claims_preview(pre: PreparedRun, claims: worker.ClaimsPreview | None) -> None:
    """A claims file: how many rows it would add, update, leave unchanged and refuse, and the printed names it
    would leave unlinked, each with the command that links it (what `python -m ingest FILE --dry-run` says)."""
    st.markdown(f"**claims file** · {len(pre.results):,} claims read")
    if claims is None:
        return
    plan = claims.plan
    refused = len(plan.refused) + sum(claims.refused_reading.values())
    m = st.columns(4)
    for col, (label, n) in zip(m, (("To add", plan.added), ("To update", plan.updated),
                                   ("Unchanged", plan.unchanged), ("Refused", refused)), strict=True):
        col.metric(label, f"{n:,}")
    rows = [*claims.refusals, *up.refused_reading(claims.refused_reading)]
    if rows:
        st.dataframe({"refused row": rows}, hide_index=True, height=min(35 * len(rows) + 38, 250))
    for name in plan.unlinked:
        st.warning(_ui.plain(name.warning()), icon=":material/link_off:")
    if plan.unlinked:
        st.caption("Unlinked rows are stored with the name as printed; the Sources page lists them, and "
                   "`python -m perfledger catalog add FILE.csv` adds a missing model or accelerator.")
