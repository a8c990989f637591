"""One run's steady state on its page: the window's figures, why it is not a steady state, its launches and the
log's own figures, and the per-step charts with the window shaded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
import streamlit as st
from sqlalchemy import Engine

from perfledger import numbers, views
from perfledger.calc.steady import SteadyState
from perfledger.records import RunRow
from perfledger.views import runs as rv
from perfledger.views.registry import Page
from screens import _run_charts, _ui


def show_steady(db: Engine, row: RunRow, summary: SteadyState, steps: pl.DataFrame, state: Any,
                stored: Sequence[str], page: Page[Any]) -> None:
    m = st.columns(4)
    m[0].metric("Steady steps", f"{summary.steps_in_window:,}", f"{summary.warmup_steps} warm-up · {summary.stalls} stalls",
                delta_color="off", delta_arrow="off")
    m[1].metric("Median step time", numbers.text(summary.step_time_s_median, "s"))
    m[2].metric("Jitter (CV)", numbers.text(summary.jitter_cv))
    m[3].metric("Tokens/s (all devices)", _all_devices(row, summary))
    source = (row.summary or {}).get("step_time_source")
    st.caption(summary.rule.describe() + " · the shaded band is the steady window"
               + (f" · step time: {source}" if source else ""))  # one of _records.STEP_TIME_SOURCES
    if (parts := rv.rlhf_parts(row)) is not None:
        st.caption(_ui.plain(parts))
    if fallback := (row.config.get("format_meta") or {}).get("mfu_peak_fallback"):
        st.warning(_ui.plain(f"The log's own MFU (its line on the MFU chart) is against its fallback peak (A100), not "
                             f"this device's ({fallback}): it is not this run's MFU."), icon=":material/warning:")
    for flag in views.not_steady(summary):
        st.warning(_ui.plain(f"Not a steady state: {flag}."))
    for title, frame in (("Launches in this file (the run is summarised over the longest)", views.launches(db, row.id)),
                         ("The log's own figures beside the recomputed ones", views.printed_vs_recomputed(db, row.id))):
        if frame.height:
            st.markdown(f"**{title}**")
            _ui.show_table(frame, stored, key=_ui.key(page, f"t{len(title)}"))
    _run_charts.per_step(state, steps, summary)


def _all_devices(row: RunRow, summary: SteadyState) -> str:
    """The window's tokens/s over all devices; from the per-device figure and the devices where the log gives only
    that (torchtitan's tps)."""
    per_device, devices = (row.summary or {}).get("tokens_per_s_per_device"), row.config.get("n_devices")
    total = summary.tokens_per_s or (per_device * devices if per_device and devices else None)
    return numbers.text(total) if total else "—"


def show_claims(db: Engine, run_id: int, stored: Sequence[str]) -> None:
    """Every published figure of the run's model, accelerator and workload, collapsed: their FLOPs counts differ,
    so the verdict above, not this table, sets TFLOP/s side by side."""
    claims = views.nearest_claims(db, run_id)
    with st.expander(f"Every published figure for this model, accelerator and workload ({claims.height})"):
        st.caption("As stored: TFLOP/s and MFU here follow each row's own FLOPs count and peak; the verdict above "
                   "compares on tokens/s per device, and TFLOP/s only under one count.")
        if claims.height:
            _ui.show_table(claims, stored, key="run_claims")
