"""History: one configuration's steady-state figure run after run, change points, regressions, a reference line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from perfledger import charts, history_chart, numbers, views
from perfledger.errors import PerfledgerError
from perfledger.views import history
from screens import _ui

PAGE = _ui.this_page(__file__)
STORED = ("reference",)  # the vendor's figure, as stored (a run's own is derived from its steps)
# the figure and its verdict beside the configuration on a 1440px screen (the value was the eighth column, off-screen)
FIRST = ("configuration", "date", "value", "unit", "worse than before", "regression", "change point", "run id", "file")
WIDTHS = {"configuration": 260}
AXIS_LABELS = {"date": "By date run", "version": "By framework version"}
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("History")
_ui.stop_if_empty(db)

c1, c2 = st.columns([3, 2])
metric = c1.segmented_control("Figure", history.METRICS, default=state.metric, key=_ui.key(PAGE, "y"),
                              format_func=history.METRIC_LABELS.__getitem__)
by = c2.segmented_control("Axis", history.AXES, default=state.by, key=_ui.key(PAGE, "x"),
                          format_func=AXIS_LABELS.__getitem__)
state = replace(state, metric=metric or state.metric, by=by or state.by)
try:
    configs = history.configurations(db, state.metric)
except PerfledgerError as exc:
    _ui.render_error(exc)


def pick(label: str, column: str, current: str, where: Any) -> str:
    """A choice among the stored configurations' values of `column` ("" for any)."""
    values = sorted({str(v) for v in configs[column].drop_nulls().to_list() if str(v)})
    return _ui.choose(label, ["", *values], current, key=_ui.key(PAGE, column), where=where,
                      fmt=lambda v: v or "any")


with st.expander(_ui.plain(history.filters_label(state)), icon=":material/filter_list:"):
    k1, k2, k3, k4 = st.columns(4)
    k5, k6, k7 = st.columns(3)
    state = replace(state, model=pick("Model", "model", state.model, k1),
                    accelerator=pick("Accelerator", "accelerator", state.accelerator, k2),
                    devices=int(pick("Devices", "devices", str(state.devices or ""), k3) or 0),
                    precision=pick("Precision", "precision", state.precision, k4),
                    workload=pick("Workload", "workload", state.workload, k5),
                    layout=pick("Layout", "layout", state.layout, k6),
                    framework=pick("Framework", "framework", state.framework, k7))
    t1, t2, t3 = st.columns(3)
    state = replace(
        state,
        threshold=float(t1.number_input("Regression threshold (%)", 0.0, 100.0, state.threshold, 0.5,
                                        key=_ui.key(PAGE, "t"))),
        window=int(t2.number_input("Runs before each to compare with", 1, 50, state.window, key=_ui.key(PAGE, "w"))),
        reference=float(t3.number_input("Reference line (% of the vendor's figure; 0: none)", 0.0, 200.0,
                                        state.reference, 5.0, key=_ui.key(PAGE, "r"))))
_ui.keep_in_url(state)
_ui.describe(state)

table = _ui.compute(PAGE, state, db)
if table.height == 0:
    st.info("No ingested run has this figure for this configuration; choose 'any' for a field, or ingest a log "
            "(python -m ingest FILE --model ID when the log does not name its model).")
    _ui.show_table(table, STORED, key="history_table", first=FIRST, widths=WIDTHS)
    _ui.download(state, table)
    st.stop()
for row in history.regressed(table).iter_rows(named=True):
    st.error(_ui.plain(f"Run {row['run id']} ({row['file']}, {row['date']:%Y-%m-%d}) is "
                       f"{numbers.percent_text(row['worse than before'])} worse than the median of the runs before it "
                       f"({row['configuration']})."), icon=":material/trending_down:")
    _ui.page_link(st, f"Open run {row['run id']} ({row['file']})", views.links.run(row["run id"]),
                  ":material/open_in_new:")
with _ui.answer():
    _ui.chart(charts.spec(history_chart.history_lines, history.chart_points(table, state.by), by=state.by,
                          value_title=history.METRIC_LABELS[state.metric]), state, "history")
    _ui.show_table(table, STORED, key="history_table", first=FIRST, widths=WIDTHS)
_ui.download(state, table)
if undated := history.undated(table):
    st.warning(f"{undated} of {table.height} runs printed no date in their log: they are placed at the date they "
               "were ingested (column 'date from').", icon=":material/event_busy:")
if table["reference"].is_null().all() and state.reference:
    st.info("No published figure is stored for this model, accelerator, device count and precision: no "
            "reference line.")
_ui.show_formula(PAGE, note="Change points: the L1 piecewise-constant fit of Friedrich et al. (2008) as in asv's "
                            "step detection; a regression: worse than the median of the runs before it by more "
                            "than the threshold, the rule `python -m perfledger check` applies.")
