"""Hostile links in a real browser: Markdown, bare URLs and e-mail addresses from the URL are drawn as text (no link
to the attacker's host, no image fetched from it), which only the rendered page shows. That no URL value makes a
page raise is proved without a browser, for every key and hostile value, in tests/screens/test_hostile_urls.py."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, Route

from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot

pytestmark = pytest.mark.browser

LINK, IMAGE = "[Session expired - log in again](http://evil/phish)", "![q](http://host/b.png)"


def _count_requests_to(page: Page, host: str) -> list[str]:
    seen: list[str] = []

    def block(route: Route) -> None:
        seen.append(route.request.url)
        route.abort()

    page.route(re.compile(rf"^https?://{re.escape(host)}(/|$)"), block)
    return seen


def test_markdown_in_url_values_renders_as_text_and_fetches_nothing(page: Page, server: Server) -> None:
    requests = _count_requests_to(page, "host") + _count_requests_to(page, "evil")
    open_app(page, server, f"scaling?m={quote(LINK)}&a={quote(IMAGE)}")
    open_app(page, server, f"overview?by={quote(IMAGE)}")
    assert_no_exception(page)
    page.wait_for_timeout(500)
    assert page.locator('a[href^="http://evil"]').count() == 0
    assert page.locator('img[src^="http://host"]').count() == 0
    assert requests == []
    assert "![q](http://host/b.png)" in page.inner_text('[data-testid="stMain"]').replace("\u2060", "")  # joiner: no autolink


HOSTILE_TEXT = "[click me](https://evil.example) https://evil.example/bare www.evil.example ceo@evil.example"
# Pages whose URL text reaches a heading, a legend and a notice. tests/screens/test_hostile_urls.py checks, on every
# page, that no such text reaches the renderer able to become a link; these show the renderer leaves it text.
TEXT_KEYS = {"speedups": ("m", "bf", "cv"), "history": ("m", "a", "p", "l", "f"), "sources": ("src",)}


@pytest.mark.parametrize("slug", list(TEXT_KEYS))
def test_text_from_a_url_becomes_no_link_on_any_page(page: Page, server: Server, slug: str) -> None:
    """Markdown links, bare URLs and e-mail addresses typed into a link are drawn as the characters typed: the page's
    DOM holds no <a> leading off the app, and none whose address carries the typed text."""
    query = "&".join(f"{k}={quote(HOSTILE_TEXT)}" for k in TEXT_KEYS[slug]) + ("&p=custom" if slug == "speedups" else "")
    requests = _count_requests_to(page, "evil.example")
    open_app(page, server, f"{slug}?{query}")
    assert_no_exception(page)
    hrefs: list[str] = page.eval_on_selector_all('[data-testid="stMain"] a', "els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in hrefs if "evil" in (h or "") or "://" in (h or "") and not h.startswith(server.base)], hrefs
    assert page.locator('[data-testid="stMain"] a[href^="mailto:"]').count() == 0
    assert requests == []
    if slug == "speedups":
        heading = page.locator("h3").filter(has_text="click me").first.inner_text()
        assert "[click me](https://evil.example)" in heading.replace("\u2060", "")
        screenshot(page, "hostile-url-speedups-heading")
