"""Widgets write their state to the URL; the copied URL, opened in a fresh browser, shows the same view,
and its Download CSV gives the bytes `python -m perfledger export PAGE "QUERY"` prints for that URL's query."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import views
from perfledger.records import RunConfig
from tests.browser.conftest import (
    LOGS,
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    segment,
    select,
    settle,
    table_cells,
)

pytestmark = pytest.mark.browser


def _metrics(page: Page) -> list[str]:
    """The figures of the run page's steady-state block (its verdict's figures come before it)."""
    block = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text="Steady steps").last
    values = block.locator('[data-testid="stMetricValue"]')
    expect(values.first).to_be_visible()
    return values.all_inner_texts()


def _leading_columns(page: Page, width: int = 6) -> list[list[str]]:
    """The first `width` cells of every row the page's first table has drawn (it draws only the columns that fit,
    and how many fit depends on widths measured in the browser)."""
    rows = page.locator('[data-testid="stDataFrame"]').first.locator('[role="row"]')
    return [row.locator('[role="gridcell"]').all_inner_texts()[:width] for row in rows.all()]


def _reopen(new_page: Callable[[], Page], server: Server, url: str) -> Page:
    fresh = new_page()
    server.opened.append(url)
    fresh.goto(url)
    settle(fresh)
    assert_no_exception(fresh)
    return fresh


def assert_download_equals_export(page: Page, server: Server, slug: str) -> None:
    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    got = Path(info.value.path()).read_bytes()
    engine = server.engine()
    expected = views.export(slug, urlsplit(page.url).query, engine)
    engine.dispose()
    assert got == expected
    assert got.count(b"\n") > 1


def test_speedups_selection_survives_a_copied_link(server: Server, new_page: Callable[[], Page]) -> None:
    page = open_app(new_page(), server, "/speedups")
    segment(page, "FSDP vs 3D")
    page.get_by_text("FLOPs formula of the recomputed TFLOPS").click()  # a setting, folded under the answer
    expect(page.get_by_label("FLOPs formula for recomputed TFLOPS")).to_be_visible()
    settle(page)
    select(page, "FLOPs formula for recomputed TFLOPS", "6N (parameters only)")
    page.wait_for_url("**p=fsdp**")
    url, cells = page.url, table_cells(page, having="gpt3-20b")

    fresh = _reopen(new_page, server, url)
    expect(fresh.locator('[data-testid="stButtonGroup"] button[aria-checked="true"]')).to_have_text("FSDP vs 3D")
    formula = fresh.locator('[data-testid="stSelectbox"]').filter(has_text="FLOPs formula")
    expect(formula.locator("input")).to_have_value("6N (parameters only)")
    assert table_cells(fresh, having=cells[0]) == cells
    assert_download_equals_export(fresh, server, "speedups")


def test_accelerators_selection_survives_a_copied_link(server: Server, new_page: Callable[[], Page]) -> None:
    page = open_app(new_page(), server, "/accelerators")
    select(page, "Normalize", "as MFU (dense peak of the row's precision)")
    select(page, "Metric", "model TFLOP/s/device")
    page.wait_for_url("**n=mfu**")
    page.wait_for_url("**mt=model_tflops_per_device**")
    # the metric column sits right of the screen now that the figure comes first; the unit cell is on screen
    url, cells = page.url, table_cells(page, having="MFU (%)")

    fresh = _reopen(new_page, server, url)
    selects = fresh.locator('[data-testid="stSelectbox"]')
    expect(selects.filter(has_text="Normalize").locator("input")).to_have_value("as MFU (dense peak of the row's precision)")
    expect(selects.filter(has_text="Metric").locator("input")).to_have_value("model TFLOP/s/device")
    table_cells(fresh, having=cells[0])
    assert _leading_columns(fresh) == _leading_columns(page)  # the grid draws only the columns that fit
    assert_download_equals_export(fresh, server, "accelerators")


@pytest.fixture(scope="module")
def stored_run(server: Server) -> int:
    """A Megatron run written straight into the server's store (the dashboard holds no connection)."""
    log = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
    engine = server.engine()
    out = pipeline.commit(engine, Path(log).read_bytes(), log.name, RunConfig())
    engine.dispose()
    assert out.run_id is not None
    return out.run_id


def test_run_page_window_survives_a_copied_link(server: Server, new_page: Callable[[], Page], stored_run: int) -> None:
    page = open_app(new_page(), server, f"/runs?run={stored_run}")
    window = page.get_by_label("Window first step (-1 = rule)")
    window.fill("20")
    window.press("Enter")
    settle(page)
    page.wait_for_url("**w0=20**")
    url, values = page.url, _metrics(page)
    assert f"run={stored_run}" in url

    fresh = _reopen(new_page, server, url)
    expect(fresh.get_by_label("Window first step (-1 = rule)")).to_have_value("20")
    assert _metrics(fresh) == values
    screenshot(fresh, "run-page")
    assert_download_equals_export(fresh, server, "runs")
