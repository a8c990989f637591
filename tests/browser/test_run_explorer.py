"""The Runs page as a run explorer in Chromium: the configuration header, the per-step charts, two runs overlaid."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from perfledger import store
from perfledger.views.runs import runs_list
from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle

pytestmark = pytest.mark.browser
CHART = '[data-testid="stVegaLiteChart"]'


def stepped_runs(server: Server) -> list[int]:
    engine = server.engine()
    try:
        runs = runs_list(store.runs(engine))
    finally:
        engine.dispose()
    return runs.filter(runs["n_steps"] > 5).sort("n_steps", descending=True)["id"].to_list()


def test_a_run_page_shows_its_configuration_and_per_step_charts(server: Server, page: Page) -> None:
    run = stepped_runs(server)[0]
    open_app(page, server, f"/runs?run={run}")
    header = page.locator("table").filter(has_text="accelerator").first
    expect(header).to_contain_text("parallelism")
    expect(header).to_contain_text("global / micro batch")
    expect(page.locator(CHART).first).to_be_visible()
    assert page.locator(CHART).count() >= 3  # step time, tokens/s per device, loss at least
    assert_no_exception(page)
    screenshot(page, "runs-explorer-one-run")


def test_two_runs_overlay_on_the_same_axes_and_the_link_keeps_them(server: Server, page: Page) -> None:
    first, second = stepped_runs(server)[:2]
    open_app(page, server, f"/runs?run={first}&vs={second}&x=tokens")
    expect(page.get_by_text(f"Run {first} overlaid with run {second}").first).to_be_visible()
    expect(page.get_by_text("Config diff")).to_be_visible()
    assert "vs=" in page.url and "x=tokens" in page.url
    assert_no_exception(page)
    screenshot(page, "runs-explorer-overlay-by-tokens")
    page.locator('[data-testid="stButtonGroup"] button').filter(has_text="step").first.click()
    settle(page)
    assert "x=tokens" not in page.url and f"vs={second}" in page.url
    assert_no_exception(page)
