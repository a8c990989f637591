"""MLPerf results: every stored MLPerf Training result, time to train in minutes as MLPerf reports it."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import charts, views
from perfledger.views import mlperf
from screens import _ui

PAGE = _ui.this_page(__file__)
STORED = ("time to train (s)",)  # run_stop - run_start as the file gives it
WIDTHS = {"benchmark": 130, mlperf.MINUTES: 120, "submitter": 130, "accelerator × count": 170, "run": 70}
FILTERS = (("rounds", "Round"), ("divisions", "Division"), ("submitters", "Submitter"), ("benchmarks", "Benchmark"),
           ("accelerators", "Accelerator"))
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("MLPerf results")
_ui.stop_if_empty(db)

options = mlperf.choices(db)
for column, (name, label) in zip(st.columns(len(FILTERS)), FILTERS, strict=True):
    with column:
        state = replace(state, **{name: _ui.choose_many(label, options[name], getattr(state, name),
                                                        key=_ui.key(PAGE, name))})
_ui.keep_in_url(state)
_ui.describe(state)
for name, label in FILTERS:
    if unknown := [v for v in getattr(state, name) if v not in options[name]]:
        st.info(_ui.plain(f"No stored MLPerf result has {label.lower()} {', '.join(map(repr, unknown))}."),
                icon=":material/link_off:")
st.caption("Time to train is each result file's: run_stop - run_start, in minutes. One file is one run, not MLPerf's "
           "score: that is the olympic mean of a set of runs of one submitter's system (the Campaigns page scores "
           "a set under its benchmark's rule and says how many runs it still needs). The round is the "
           "one the file's name states (a result file does not print it). Columns marked *derived* are not MLPerf "
           "metrics: tokens/s from the trained tokens over the time to train, model TFLOP/s from those tokens/s "
           "times the model's FLOPs per token at the stated sequence length.")
table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No stored MLPerf result matches these filters: upload a result_N.txt on the Runs page, "
            "or run `python -m ingest result_0.txt`." if any(options.values()) else "No MLPerf result stored yet: upload "
            "a result_N.txt on the Runs page, or run `python -m ingest result_0.txt`.")
    st.stop()
with _ui.answer():
    _ui.chart(charts.spec(charts.mlperf_bars, table, _ui.colours()), state, "time-to-train")
    _ui.show_table(table, STORED, key="mlperf_table", widths=WIDTHS)
_ui.download(state, table)
_ui.show_formula(PAGE, lambda: views.input_rows(table, db))
