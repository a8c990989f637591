"""Hostile links in a real browser: no traceback, and Markdown from the URL is drawn as text (no link to the
attacker's host, no image fetched from it)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import Page, Route

from tests.browser.conftest import Server, assert_no_exception, open_app

pytestmark = pytest.mark.browser

LINK, IMAGE = "[Session expired - log in again](http://evil/phish)", "![q](http://host/b.png)"


def _count_requests_to(page: Page, host: str) -> list[str]:
    seen: list[str] = []

    def block(route: Route) -> None:
        seen.append(route.request.url)
        route.abort()

    page.route(f"http://{host}/**", block)
    return seen


@pytest.mark.parametrize("path", [
    "sources?k=foo", "runs?run=99999999999999999999999", "time-to-train?tok=99999999999999999999999",
    "accelerators?usd=1e309&n=%3Cscript%3E", "speedups?p=custom&bf=" + "x" * 5000,
])
def test_a_hostile_link_shows_the_page_and_no_traceback(page: Page, server: Server, path: str) -> None:
    open_app(page, server, path)
    assert_no_exception(page)
    assert "Traceback" not in page.content()


def test_markdown_in_url_values_renders_as_text_and_fetches_nothing(page: Page, server: Server) -> None:
    requests = _count_requests_to(page, "host") + _count_requests_to(page, "evil")
    open_app(page, server, f"scaling?m={quote(LINK)}&a={quote(IMAGE)}")
    open_app(page, server, f"overview?by={quote(IMAGE)}")
    assert_no_exception(page)
    page.wait_for_timeout(500)
    assert page.locator('a[href^="http://evil"]').count() == 0
    assert page.locator('img[src^="http://host"]').count() == 0
    assert requests == []
    assert "![q](http://host/b.png)" in page.inner_text('[data-testid="stMain"]')
