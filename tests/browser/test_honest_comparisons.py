"""The H200 vs A100 comparisons as a reader sees them: the unstated precision said as such, one like-for-like
verdict on Speedups and Head to head, the sources' notes on the compared rows, and the head-to-head's chart and
formula."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'
UNLIKE = "Not like for like: precision, devices, framework version"
FP8 = "precision unstated: plausible only in FP8"


def _open_notes(page: Page) -> None:
    page.get_by_text("The sources' notes on these rows").click()
    settle(page)


def test_speedups_say_the_precision_is_unstated_and_show_the_rows_notes(server: Server, page: Page) -> None:
    open_app(page, server, "/speedups")
    assert_no_exception(page)
    for fold in ("Caveats: not like for like", "The audit finds 3 configurations"):
        page.get_by_text(fold).click()
        settle(page)
    text = page.inner_text(MAIN).replace("\u2060", "")
    assert UNLIKE in text and "precision unstated on both sides" in text
    assert FP8 in text and "implausible (" not in text
    _open_notes(page)
    expect(page.locator(MAIN)).to_contain_text("so the H200 runs were likely FP8")
    screenshot(page, "speedups-honest-warnings")


def test_head_to_head_judges_the_same_pair_alike_and_draws_it_with_its_formula(server: Server, page: Page) -> None:
    open_app(page, server, "/accelerators?s=head")
    assert_no_exception(page)
    main = page.locator(MAIN)
    expect(main).to_contain_text("a100-80gb vs h200 on tokens_per_s_per_device: h200 / a100-80gb median 4.00x")
    expect(main).to_contain_text("none like for like")
    chart = page.locator('[data-testid="stVegaLiteChart"]').first
    chart.wait_for()
    assert chart.bounding_box()["height"] > 100  # type: ignore[index]
    page.get_by_text("How is this computed?").click()
    settle(page)
    expect(main.locator('[data-testid="stCode"]').filter(has_text="speedup = candidate / baseline")).to_have_count(1)
    expect(main).to_contain_text("perfledger.calc.like_for_like")
    _open_notes(page)
    expect(main).to_contain_text("so the H200 runs were likely FP8")
    screenshot(page, "head-to-head-chart-formula-notes")
