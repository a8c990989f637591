"""Every registered page renders in Chromium: a screenshot, no Streamlit exception, and its chart drawn."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from perfledger.views.registry import PAGES
from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle

pytestmark = pytest.mark.browser

CHARTED = {"overview", "speedups", "accelerators", "scaling", "time-to-train"}
CHART_MARKS = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'


def test_every_page_renders_without_exception_and_draws_its_chart(server: Server, page: Page) -> None:
    open_app(page, server, "/")
    for entry in PAGES:
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=entry.title).click()
        page.wait_for_url(f"**/{entry.slug}*")
        settle(page)
        expect(page.locator("h1").first).to_be_visible()
        assert_no_exception(page)
        if entry.slug in CHARTED:
            marks = page.locator(CHART_MARKS).first
            marks.wait_for()
            assert marks.bounding_box()["height"] > 50, f"{entry.slug}: chart drawn with no height"  # type: ignore[index]
        screenshot(page, f"page-{entry.slug}")


def test_opening_how_is_this_computed_shows_the_formulas_and_the_input_rows(server: Server, page: Page) -> None:
    open_app(page, server, "/accelerators?m=llama2-70b")
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="How is this computed?")
    expect(panel.locator('[data-testid="stCode"]')).to_have_count(0)  # drawn when opened, not on first paint
    panel.get_by_text("How is this computed?").click()
    settle(page)
    assert_no_exception(page)
    expect(panel.locator('[data-testid="stCode"]').first).to_contain_text("model_tflops = tokens_per_s_per_device")
    expect(panel.get_by_text("Input rows (")).to_be_visible()
    expect(panel.locator('[data-testid="stDataFrame"]')).to_have_count(1)
    screenshot(page, "formula-panel-accelerators")
