"""The History page in Chromium on a nightly series of real logs (one night slowed by 4%): the slowed run is named
in red above the chart, the chart is drawn with its flagged point, and the table lists every night."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    settle,
    start_server,
    stop_server,
    table_cells,
)
from tests.history.series import SLOWED_NIGHT, stored_series

CHART = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'


@pytest.fixture(scope="module")
def series_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[int]]]:
    url, runs = stored_series(tmp_path_factory, slowed_night=SLOWED_NIGHT)
    proc, server = start_server(tmp_path_factory.mktemp("history-server"), Path(url.removeprefix("duckdb:///")))
    yield server, runs
    stop_server(proc)


def test_the_slowed_night_is_flagged_on_the_drawn_page(series_server: tuple[Server, list[int]], page: Page) -> None:
    server, runs = series_server
    open_app(page, server, "history?m=llama3-8b&r=95")
    assert_no_exception(page)
    slowed = runs[SLOWED_NIGHT]
    alert = page.locator('[data-testid="stAlertContentError"]')
    expect(alert).to_have_count(1)
    expect(alert).to_contain_text(f"Run {slowed} (night{SLOWED_NIGHT:02d}_")
    expect(alert).to_contain_text("worse than the median of the runs before it")
    expect(page.locator(CHART).first).to_be_visible()
    cells = table_cells(page, having="night07_")
    assert any(f"night{SLOWED_NIGHT:02d}_" in c for c in cells)
    assert screenshot(page, "history-slowed-night").stat().st_size > 20_000


def test_the_slowed_night_links_to_its_run(series_server: tuple[Server, list[int]], page: Page) -> None:
    server, runs = series_server
    open_app(page, server, "history?m=llama3-8b")
    slowed = runs[SLOWED_NIGHT]
    page.locator('[data-testid="stPageLink"] a').filter(has_text=f"Open run {slowed} (").click()
    settle(page)
    page.wait_for_url(f"**/runs?run={slowed}**")
    expect(page.locator("h3").first).to_contain_text(str(slowed))
    assert_no_exception(page)


def test_the_chart_redraws_by_framework_version(series_server: tuple[Server, list[int]], page: Page) -> None:
    server, _ = series_server
    open_app(page, server, "history?m=llama3-8b&x=version&y=step_time_s")
    assert_no_exception(page)
    expect(page.locator(CHART).first).to_be_visible()
    expect(page.locator('[data-testid="stAlertContentError"]')).to_have_count(1)
