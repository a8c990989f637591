"""An MLPerf result's headline on its run page: MLPerf's score (time to train, in minutes) first, the figures derived
from it beside, labelled so, and the submission it came from."""

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
    m = _ui.answer().columns(3)
    m[0].metric("Time to train (MLPerf's score)", numbers.text(head[mlperf.MINUTES], "min"),
                help="run_stop - run_start of the result file, in minutes as MLPerf reports it")
    m[1].metric("Model TFLOP/s per device (derived)", numbers.text(head[mlperf.DERIVED_TFLOPS]),
                help="tokens/s per device x the model's FLOPs per token at the stated sequence length / 1e12")
    m[2].metric("Tokens/s per device (derived)", numbers.text(head[mlperf.DERIVED_TOKENS]),
                help="trained tokens over the time to train, per device: not an MLPerf metric")
    said = [f"{k} {head[k]}" for k in ("submitter", "division", "system", "round") if head.get(k)]
    why = f" Model TFLOPS are not derived: {head['why no TFLOPS']}." if head["why no TFLOPS"] else ""
    st.caption(_ui.plain(f"MLPerf Training result, benchmark {head['benchmark']}: {', '.join(said)}. Derived figures "
                         f"are not MLPerf metrics.{why}"))
    _ui.page_link(st, "Every stored MLPerf result", links.to(mlperf.MlperfView()), ":material/trophy:")
    _ui.show_table(figures, stored, key="mlperf_figures")
    return True
