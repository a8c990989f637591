""""How is this computed?": the formulas, the note and the input rows a page's figures came from, drawn when the
panel is opened (not on every first paint) and then complete."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Expander

from perfledger import views
from perfledger.views.registry import PAGES

WITH_INPUTS = {"accelerators", "scaling", "speedups"}


def formula_panel(at: AppTest) -> Expander:
    return next(e for e in at.expander if e.label == "How is this computed?")


@pytest.mark.parametrize("slug", sorted(WITH_INPUTS | {"audit", "time-to-train"}))
def test_the_formula_panel_is_drawn_closed_and_empty_until_opened(
        slug: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug)
    assert not at.exception, at.exception
    assert len(formula_panel(at).code) == 0
    assert not any(c.value.startswith("Input rows") for c in formula_panel(at).caption)


@pytest.mark.parametrize("slug", sorted(WITH_INPUTS | {"audit", "time-to-train"}))
def test_an_opened_formula_panel_shows_every_formula_and_the_input_rows(
        slug: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    page = next(p for p in PAGES if p.slug == slug)
    at = open_page(slug)
    at.session_state[f"formula:{slug}"] = True
    at.run()
    assert not at.exception, at.exception
    panel = formula_panel(at)
    assert [c.value for c in panel.code] == [views.formula_of(f) for f in page.formulas]
    if slug in WITH_INPUTS:
        inputs = next(c.value for c in panel.caption if c.value.startswith("Input rows"))
        assert int(inputs.removeprefix("Input rows (").removesuffix("):")) > 0
        assert panel.dataframe[0].value.shape[0] > 0
