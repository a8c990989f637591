"""The History page's state round-trips through its URL, and says what it shows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as hs

from perfledger import urlstate
from perfledger.views.history import AXES, METRICS, HistoryView

_TEXT = hs.text(hs.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters=","), max_size=30)


@given(hs.builds(HistoryView, model=_TEXT, accelerator=_TEXT, devices=hs.integers(0, 4096), precision=_TEXT,
                 layout=_TEXT, framework=_TEXT, metric=hs.sampled_from(METRICS), by=hs.sampled_from(AXES),
                 window=hs.integers(1, 50), threshold=hs.floats(0, 100), reference=hs.floats(0, 200)))
def test_the_history_view_survives_its_url(view: HistoryView) -> None:
    assert urlstate.from_query(HistoryView, urlstate.to_query(view)) == view


def test_the_view_names_the_configuration_and_the_rule() -> None:
    view = HistoryView(model="llama3-8b", accelerator="b200", devices=8, metric="step_time_s", threshold=3.0)
    assert view.describe() == ("Step time (s) over time for llama3-8b · b200 · 8; a run more than 3% worse than the "
                               "median of the 5 runs before it is flagged")


def test_a_figure_the_page_does_not_follow_falls_back_and_says_so() -> None:
    view = urlstate.from_query(HistoryView, {"y": "loss", "t": "-1"})
    assert view.metric == "tokens_per_s_per_device" and view.threshold == 2.0 and len(view.problems) == 2
