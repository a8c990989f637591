"""An MLPerf result on its run page, under its verdict (time to train of this one file, the figures derived from it):
the submission it came from and its stored figures. One result file is not MLPerf's score: a score is the olympic
mean of a set of runs of one submitter's system (Campaigns)."""

from __future__ import annotations

import polars as pl
import streamlit as st
from sqlalchemy import Engine

from perfledger import numbers
from perfledger.records import RunRow
from perfledger.views import links, mlperf
from screens import _ui


def show_headline(db: Engine, row: RunRow, figures: pl.DataFrame, stored: tuple[str, ...]) -> bool:
    """The headline and the stored figures of an MLPerf result (nothing collapsed); False for any other run."""
    head = mlperf.headline(db, row)
    if head is None:
        return False
    said = [f"{k} {head[k]}" for k in ("submitter", "division", "system", "round") if head.get(k)]
    why = f" Model TFLOPS are not derived: {head['why no TFLOPS']}." if head["why no TFLOPS"] else ""
    st.caption(_ui.plain(f"MLPerf Training result, benchmark {head['benchmark']}: {', '.join(said)}. Its time to "
                         f"train is this one file's ({numbers.text(head[mlperf.MINUTES], 'min')}), not MLPerf's "
                         "score, which averages a set of runs of one submitter's system. Derived figures (tokens/s "
                         f"and model TFLOP/s per device) are not MLPerf metrics.{why}"))
    _ui.page_link(st, "Every stored MLPerf result", links.to(mlperf.MlperfView()), ":material/trophy:")
    _ui.show_table(figures, stored, key="mlperf_figures")
    return True
