"""Scaling draws one chart at a time, chosen in the URL; with nothing to draw it says where the figures are."""

from __future__ import annotations

import json
from collections.abc import Callable

from streamlit.testing.v1 import AppTest


def _chart_titles(at: AppTest) -> list[str]:
    specs = [json.loads(e.proto.spec) for e in at.get("vega_lite_chart")]
    return [s["title"]["text"] if isinstance(s["title"], dict) else s["title"] for s in specs]


def test_the_scaling_section_draws_one_chart_and_the_url_picks_which(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    lines = open_page("scaling")
    published = open_page("scaling", "c=stored")
    assert not lines.exception and not published.exception
    assert _chart_titles(lines) == ["Throughput vs devices, per series"]
    assert _chart_titles(published) == ["Scaling efficiency as published"]


def test_a_chosen_chart_with_nothing_to_draw_says_where_the_figures_are(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("scaling", "m=gpt2-xl")  # Emani et al.'s GPT-2 XL figures are published efficiencies only
    assert _chart_titles(at) == []
    assert any("published efficiencies are under Chart" in i.value for i in at.info)
    assert _chart_titles(open_page("scaling", "m=gpt2-xl&c=stored")) == ["Scaling efficiency as published"]
