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


def test_the_overview_answers_at_its_slug_and_at_the_root(server: Server, page: Page) -> None:
    """/overview is the slug README, links and `export` use; Streamlit serves a default page only at "/"."""
    for path in ("/overview?by=accelerator", "/?by=accelerator"):
        open_app(page, server, path)
        expect(page.get_by_text("Page not found")).to_have_count(0)
        expect(page.get_by_role("heading", name="perfledger", exact=True)).to_be_visible()
        expect(page.get_by_role("heading", name="Result rows in the ledger, by accelerator")).to_be_visible()
        assert "h100-sxm" in table_cells(page)
        assert_no_exception(page)
    screenshot(page, "overview-at-root")
    open_app(page, server, "/speedups")
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Overview").click()
    page.wait_for_url("**/overview*")
    expect(page.get_by_role("heading", name="perfledger", exact=True)).to_be_visible()
    screenshot(page, "overview-at-its-slug")
