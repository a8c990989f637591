"""Campaigns: folders imported at once (`python -m ingest DIR`), each with its score and rule; one campaign's
scores per submitter's system, its attempts (failures kept with their reason), each run's goodput and its repeats
with their spread."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from perfledger import store, views
from screens import _ui
from screens._campaign_upload import campaign_upload_panel

PAGE = _ui.this_page(__file__)
STORED = ("value", "score")  # an attempt's figure and a campaign's score, as stored
WIDTHS = {"configuration": 260}  # px: a long configuration cut, its median, spread and n beside it
db = _ui.engine()
state = _ui.page_state(PAGE)
st.title("Campaigns")
_ui.stop_if_empty(db)
campaign_upload_panel(PAGE)

listed = store.campaigns(db)
ids = [0, *listed["id"].to_list()]
names = dict(zip(listed["id"].to_list(), listed["name"].to_list(), strict=True))
picked = st.selectbox("Campaign", ids, index=ids.index(state.campaign) if state.campaign in ids else 0,
                      key=_ui.key(PAGE, "c"),  # an option is shown as plain text: not escaped as Markdown is
                      format_func=lambda i: f"{i}: {names[i]}" if i else "every campaign")
if state.campaign and state.campaign not in ids:
    st.warning(f"There is no campaign {state.campaign}; showing every campaign.")
state = replace(state, campaign=picked)
_ui.keep_in_url(state)
_ui.describe(state)

if not state.campaign:
    if listed.is_empty():
        st.info("No campaign yet. Import a folder of logs with `python -m ingest DIR`, or its zip above (an MLPerf "
                "submission, a sweep, a job table): every log becomes a run, every failure an outcome with its reason.")
    table = _ui.compute(PAGE, state, db)
    with _ui.answer():
        _ui.show_table(table, STORED, key="campaigns_list")
    _ui.download(state, table)
    st.stop()

header = views.campaigns.campaign_header(db, state.campaign) or {}
scores = views.campaigns.system_scores(db, state.campaign)
c1, c2 = _ui.answer().columns([1, 3])
c1.metric(*views.campaigns.score_headline(header, scores if scores.height else None))
c2.markdown(f"**Rule:** {_ui.plain(header.get('score_rule') or '')}")
if header.get("score_note"):
    c2.caption(_ui.plain(header["score_note"]))
counts = views.campaigns.outcome_counts(db, state.campaign)
cols = st.columns(max(len(counts), 1))
for col, (kind, n) in zip(cols, sorted(counts.items()), strict=False):
    col.metric(kind, n)
submission = (header.get("meta") or {}).get("submission")
if submission:
    st.caption(_ui.plain(" · ".join(f"{k.removeprefix('submission_')}: {v}" for k, v in submission.items())))
for refusal in (header.get("meta") or {}).get("refusals") or []:
    st.warning(_ui.plain(f"Refused: {refusal}"), icon=":material/block:")

if scores.height > 1:
    st.markdown("**MLPerf's score, one per submitter's system and benchmark**")
    st.caption("A single result file is one run with its time to train; a score is the olympic mean of a set of "
               "runs of one submitter's system, under its benchmark's rule: `still needed` says how many runs the set "
               "lacks.")
    _ui.show_table(scores, key="campaign_scores")

st.subheader("Attempts")
st.caption("One row per log or job: a failure (out of memory, timeout, cancelled, NaN loss, no steps) is kept with "
           "the reason and line the log gave, beside the runs that completed.")
table = _ui.compute(PAGE, state, db)
_ui.show_table(table, STORED, key="campaign_attempts", widths=WIDTHS)
_ui.download(state, table)

st.subheader("Its runs, and each configuration over time")
st.caption("In CI, judge every run of this campaign against its configuration's recent history (exit 1 on a "
           "regression):")
st.code(views.campaigns.check_command(state.campaign), language="bash")
for label, history_state in views.campaigns.history_views(db, state.campaign):
    _ui.page_link(st, label, views.links.to(history_state), ":material/timeline:")
run_views = views.campaigns.run_views(db, state.campaign)
with st.expander(f"Open one of its {len(run_views)} stored runs"):
    for label, run_state in run_views:
        _ui.page_link(st, label, views.links.to(run_state), ":material/open_in_new:")

st.subheader("Repeats")
st.caption("Each configuration's measured attempts (completed, cancelled or stopped at the time limit): median, "
           "interquartile range, min-max and n. `overlaps` names the configurations whose IQR overlaps this one's: "
           "their difference is within run-to-run noise.")
_ui.show_table(views.campaigns.repeats(db, state.campaign), key="campaign_repeats", widths=WIDTHS)
st.subheader("Where each run's wall time went")
st.caption("Goodput from each log's own timeline (seconds): productive steady steps, warm-up and compilation, stalls, "
           "work redone after a restart, evaluation and checkpoint saves where the log times them, and the rest of "
           "its printed span (start-up, gaps between launches, the tail); the run page draws it as one bar.")
_ui.show_table(views.verdict.goodput_rows(db, views.campaigns.run_ids(db, state.campaign)), key="campaign_goodput")
_ui.show_formula(PAGE)
