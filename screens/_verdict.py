"""A run's verdict at the top of its page: its figures, the ratio to the comparable published figure and why that
one, where its wall time went (one stacked bar), and, opened on request, the comparable rows, the differing fields
and the gap split (perfledger.views.verdict, the same as `python -m perfledger compare`)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from sqlalchemy import Engine

from perfledger import charts, goodput_chart
from perfledger.calc.compare import Verdict
from perfledger.errors import PerfledgerError
from perfledger.views import verdict as vd
from perfledger.views import verdict_text as vt
from screens import _ui

STORED = ("TFLOP/s printed",)  # a published row's TFLOP/s as its source printed it


def show_verdict(db: Engine, run_id: int, state: Any) -> Verdict | None:
    """The verdict block; a comparison that cannot be made says why in one sentence."""
    try:
        found = vd.page_verdict(run_id, state.usd or None, state.rule(), db)
    except PerfledgerError as exc:
        st.info(_ui.plain(exc), icon=":material/info:")
        return None
    st.subheader(_ui.plain(f"Verdict: {found.label}"), anchor=False)
    items = vt.headline_items(found)
    for column, (label, value, how) in zip(st.columns(len(items)), items, strict=True):
        column.metric(label, value, help=_ui.plain(how))
    st.caption(_ui.plain(vt.peak_line(found)))
    say = st.success if found.published is not None else st.info
    say(_ui.plain(found.sentence()), icon=":material/balance:")
    if found.tflops_note:
        st.caption(_ui.plain(found.tflops_note))
    if found.goodput is not None:
        _goodput(found, state)
    _details(found)
    return found


def _goodput(found: Verdict, state: Any) -> None:
    assert found.goodput is not None
    g = found.goodput
    _ui.chart(charts.spec(goodput_chart.goodput_bar, vt.goodput_frame(g), wall_s=g.wall_s), state, "goodput")
    st.caption(_ui.plain(vt.goodput_sentence(g)))


def _details(found: Verdict) -> None:
    label = (f"Comparable published rows ({len(found.comparable)}), the fields that differ "
             f"({len(found.differences)}) and the gap" if found.published else "Why it is not compared")
    with st.expander(label, icon=":material/compare_arrows:"):
        if not found.published:
            st.markdown(_ui.plain(found.reason or ""))
            return
        st.caption(_ui.plain(f"Compared on tokens/s per device ({found.published.match}); the headline uses "
                             f"result {found.published.result_id}: {found.published.why}."))
        _ui.show_table(vt.comparable_frame(found), STORED, key="verdict_rows")
        _ui.show_table(vt.differences_frame(found), STORED, key="verdict_differences")
        st.caption("The gap, in ratio points: ratio = 100% + each part the same publisher's rows show + the "
                   "unexplained rest.")
        _ui.show_table(vt.gap_frame(found), STORED, key="verdict_gap")
        if found.goodput is not None:
            _ui.show_table(vt.goodput_frame(found.goodput), STORED, key="verdict_goodput")
