"""A shared link opened as the very first request to a freshly started server shows that page in the app's frame."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, table_cells

pytestmark = pytest.mark.browser


def test_deep_link_as_first_request_opens_the_page_inside_the_app_frame(untouched_server: Server, page: Page) -> None:
    open_app(page, untouched_server, "/speedups?p=fsdp")

    expect(page.get_by_role("heading", name="Speedups", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stSidebarNav"]')).to_contain_text("Accelerators")
    expect(page.locator('[data-testid="stButtonGroup"] button[aria-checked="true"]')).to_have_text("FSDP vs 3D")
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert "gpt3-20b" in table_cells(page)
    assert_no_exception(page)
    screenshot(page, "deep-link-first-request")
