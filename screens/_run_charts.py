"""The run page's charts: one run's per-step figures (the steady window shaded and setting each axis), and the runs
overlaid, one full-width chart a figure; a chart with nothing to draw is a sentence instead."""

from __future__ import annotations

import polars as pl
import streamlit as st

from perfledger import charts, overlay_chart, step_charts
from perfledger.calc.steady import SteadyState
from perfledger.views import runs as rv
from screens import _ui


def per_step(state: rv.RunsView, steps: pl.DataFrame, summary: SteadyState | None) -> None:
    """Step time, then each per-step figure the run has, two a row."""
    window = rv.steady_window(summary)
    if steps["step_time_s"].count():
        _ui.chart(charts.spec(step_charts.step_times, steps, window, log=state.log), state, "step-time")
    else:
        st.caption("The log gives no step time: no step-time chart.")
    drawn = [c for c in rv.STEP_CHARTS[:-1] if rv.drawable(steps, c)]
    grid = st.columns(2)
    for i, ch in enumerate(drawn):
        _ui.chart(charts.spec(step_charts.step_figure, steps, ch.column, ch.title, ch.axis, printed=ch.printed,
                              window=window, log=state.log, steady=ch.steady), state, ch.column, where=grid[i % 2])
    _say_missing([c for c in rv.STEP_CHARTS[:-1] if c not in drawn], "this run")


def overlaid(state: rv.RunsView, both: pl.DataFrame, main: str) -> None:
    """Each figure of the runs overlaid, full width (the legend names every run whole above its chart)."""
    drawn = [c for c in rv.STEP_CHARTS if rv.drawable(both, c)]
    for ch in drawn:
        _ui.chart(charts.spec(overlay_chart.overlay, both, ch.column, state.x, ch.title, ch.axis, main=main,
                              log=state.log, steady=ch.steady), state, f"overlay-{ch.column}")
    _say_missing([c for c in rv.STEP_CHARTS if c not in drawn], "any of these runs")


def _say_missing(charts_: list[rv.StepChart], whose: str) -> None:
    if charts_:
        st.caption(f"Not drawn, for {whose} logs no value of it: {', '.join(c.title.lower() for c in charts_)}.")
