"""A chart downloads as PNG and SVG from the button under it, drawn when clicked, named after the page and view;
at 1440px the Speedups table keeps its pair, ratio and caveats in view."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import ARTIFACTS, Server, assert_no_exception, open_app, screenshot, table_cells

pytestmark = pytest.mark.browser


def _download(page: Page, label: str) -> tuple[str, bytes]:
    button = page.locator('[data-testid="stDownloadButton"] button').filter(has_text=label).first
    with page.expect_download() as event:
        button.click()
    return event.value.suggested_filename, Path(event.value.path()).read_bytes()


def test_the_speedups_chart_downloads_as_png_and_svg_named_after_the_view(server: Server, page: Page) -> None:
    open_app(page, server, "/speedups?p=fsdp")
    assert_no_exception(page)
    name, png = _download(page, "PNG")
    assert name == "perfledger-speedups-bars-p=fsdp.png"
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "chart-download-speedups-fsdp.png").write_bytes(png)
    name, svg = _download(page, "SVG")
    assert name == "perfledger-speedups-bars-p=fsdp.svg"
    assert svg.lstrip().startswith(b"<svg") and b"0.78" in svg  # the FSDP ratios as value labels
    assert_no_exception(page)


def test_speedups_table_shows_ratio_and_caveats_at_1440px(server: Server, page: Page) -> None:
    open_app(page, server, "/speedups?p=fsdp")
    cells = table_cells(page, having="gpt3-20b")
    assert cells[0] == "gpt3-20b" and cells[3] == "0.78" and "published ratio" in cells[4], cells[:6]
    page.locator('[data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
    screenshot(page, "speedups-fsdp-table-1440")
