"""The Runs page as a run explorer in Chromium: the configuration header, the per-step charts, two runs overlaid."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import store
from perfledger.records import RunConfig
from tests.browser.conftest import (
    LOGS,
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    settle,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.browser
CHART = '[data-testid="stVegaLiteChart"]'


TWO_RUNS = ("gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log", "gcp_a4_b200_qwen3_30b_16gpu_nemo2504.log")


@pytest.fixture(scope="module")
def runs_server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[tuple[Server, list[int]]]:
    """A server on the seeded store with two NeMo runs ingested (their ids)."""
    template = tmp_path_factory.mktemp("runs-template") / "perfledger.duckdb"
    shutil.copy(seeded_template, template)
    engine = store.engine_from_url(f"duckdb:///{template}")
    ids = []
    for name in TWO_RUNS:
        with pipeline.prepare((LOGS / name).read_bytes(), name, RunConfig(), engine=engine, limit=2**30) as prepared:
            ids.append(store.save_run(engine, prepared).run_id)
    engine.dispose()
    proc, srv = start_server(tmp_path_factory.mktemp("runs-server"), template)
    yield srv, ids
    stop_server(proc)


def test_a_run_page_shows_its_configuration_and_per_step_charts(runs_server: tuple[Server, list[int]],
                                                                page: Page) -> None:
    server, (run, _) = runs_server
    open_app(page, server, f"/runs?run={run}")
    header = page.locator("table").filter(has_text="accelerator").first
    expect(header).to_contain_text("parallelism")
    expect(header).to_contain_text("batch (global/micro)")
    expect(page.locator(CHART).first).to_be_visible()
    expect(header).to_contain_text("b200")
    expect(page.locator(CHART).nth(3)).to_be_visible()  # step time, tokens/s per device, TFLOP/s, loss
    assert_no_exception(page)
    screenshot(page, "runs-explorer-one-run")


def test_two_runs_overlay_on_the_same_axes_and_the_link_keeps_them(runs_server: tuple[Server, list[int]],
                                                                   page: Page) -> None:
    server, (first, second) = runs_server
    open_app(page, server, f"/runs?run={first}&vs={second}&x=tokens")
    expect(page.get_by_text(f"Run {first} overlaid with run {second}").first).to_be_visible()
    expect(page.get_by_text("Config diff")).to_be_visible()
    assert "vs=" in page.url and "x=tokens" in page.url
    expect(page.locator(CHART).nth(7)).to_be_visible()  # the run's own charts and the overlaid ones
    assert_no_exception(page)
    screenshot(page, "runs-explorer-overlay-by-tokens")
    page.locator('[data-testid="stButtonGroup"] button').filter(has_text="step").first.click()
    page.wait_for_url(lambda url: "x=tokens" not in url)  # the rerun that writes the URL may start late on a busy host
    settle(page)
    assert f"vs={second}" in page.url
    assert_no_exception(page)


DRAWN_MARKS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
    .filter(c => (c.querySelector('.role-title-subtitle') || {}).textContent?.includes('runs by'))
    .map(c => {
        const marks = [...c.querySelectorAll('g.role-mark > path')].map(m => m.getBoundingClientRect());
        return {title: c.querySelector('.role-title-text').textContent, marks: marks.length,
                tall: marks.length ? Math.max(...marks.map(b => b.bottom)) - Math.min(...marks.map(b => b.top)) : 0};
    })"""


@pytest.mark.parametrize("x", ["tokens"])  # the plot's height does not depend on its x axis
def test_every_overlay_chart_draws_its_runs_on_a_plot_with_height(runs_server: tuple[Server, list[int]],
                                                                  page: Page, x: str) -> None:
    """The overlays drew a title, a legend and an x axis on a plot of zero height (the legend on top took it)."""
    server, (first, second) = runs_server
    open_app(page, server, f"/runs?run={first}&vs={second}&x={x}")
    expect(page.locator(CHART).nth(9)).to_be_visible()  # five charts of the run, five overlaid
    page.wait_for_function(f"() => ({DRAWN_MARKS})().length === 5")
    drawn = page.evaluate(DRAWN_MARKS)
    screenshot(page, f"runs-overlay-marks-by-{x}")
    assert all(chart["marks"] > 0 for chart in drawn), drawn
    assert all(chart["tall"] > 40 for chart in drawn), drawn  # the marks spread over the plot's height
    assert_no_exception(page)


TOOLTIP = """() => { const t = document.getElementById('vg-tooltip-element');
    return t && t.classList.contains('visible') ? [...t.querySelectorAll('tr')].map(r => r.innerText) : []; }"""


def test_an_overlay_reads_out_each_runs_value_under_the_cross_hair(runs_server: tuple[Server, list[int]],
                                                                   page: Page) -> None:
    """Pointing at an overlay by wall clock shows a rule at the nearest x and a read-out naming every run with its
    value there (it had shown one value with no run name, over the legend)."""
    server, (first, second) = runs_server
    open_app(page, server, f"/runs?run={first}&vs={second}&x=time")
    page.wait_for_function(f"() => ({DRAWN_MARKS})().length === 5")
    chart = page.locator(CHART).filter(has_text="runs by wall clock").first
    chart.scroll_into_view_if_needed()
    box = chart.locator("svg").first.bounding_box()
    assert box is not None
    assert page.evaluate(TOOLTIP) == []  # nothing read out before the pointer comes
    for share in (0.4, 0.45):  # a move the chart sees as a pointer entering the plot
        page.mouse.move(box["x"] + box["width"] * share, box["y"] + box["height"] * 0.75)
        page.wait_for_timeout(300)
    page.wait_for_function(f"() => ({TOOLTIP})().length > 0")
    rows = page.evaluate(TOOLTIP)
    screenshot(page, "runs-overlay-cross-hair")
    runs = [f"#{first} ", f"#{second} "]
    assert all(any(r.startswith(run) for r in rows) for run in runs), rows  # every run, by name, with its value
    assert all(r.split("\t")[-1].strip() for r in rows if r.startswith("#")), rows
    assert_no_exception(page)
