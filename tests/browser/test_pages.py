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
        page.wait_for_url(f"**/{'' if entry.slug == 'overview' else entry.slug}*")
        settle(page)
        expect(page.locator("h1").first).to_be_visible()
        assert_no_exception(page)
        if entry.slug in CHARTED:
            marks = page.locator(CHART_MARKS).first
            marks.wait_for()
            assert marks.bounding_box()["height"] > 50, f"{entry.slug}: chart drawn with no height"  # type: ignore[index]
        screenshot(page, f"page-{entry.slug}")
