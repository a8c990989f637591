"""Every kind of link a page draws lands with the URL, the controls and the content agreeing, and the next edit
takes effect: Time to train's presets, Overview's headlines, Runs' "Open a run" and the Sources links."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import urlstate, views
from perfledger.records import RunConfig
from tests.browser.conftest import LOGS, Server, assert_no_exception, open_app, screenshot, settle, table_cells

pytestmark = pytest.mark.browser


def _click_link(page: Page, text: str) -> None:
    page.locator('[data-testid="stPageLink"] a').filter(has_text=text).first.click()
    settle(page)


def _query(page: Page) -> dict[str, str]:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(page.url).query))


def _set_number(page: Page, label: str, value: str) -> None:
    box = page.get_by_role("spinbutton", name=label)
    box.fill(value)
    box.press("Enter")
    settle(page)


def _select_value(page: Page, label: str) -> str:
    box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text(label, exact=True))
    return box.locator("input").first.input_value()


def test_time_to_train_preset_lands_whole_and_the_next_edit_takes(server: Server, page: Page) -> None:
    open_app(page, server, "/time-to-train")
    preset = views.links.TIME_TO_TRAIN_PRESETS[1]
    _click_link(page, "Llama 2 70B · 1B tokens")

    page.wait_for_url("**a=h200**")
    assert _query(page) == preset.link.query
    assert (_select_value(page, "Model"), _select_value(page, "Accelerator")) == ("llama2-70b", "h200")
    expect(page.get_by_role("spinbutton", name="Devices")).to_have_value("8")
    expect(page.locator("h3").first).to_have_text(preset.state.describe())
    screenshot(page, "link-ttt-preset")

    _set_number(page, "Devices", "16")
    page.wait_for_url("**n=16**")
    assert _query(page)["a"] == "h200"
    expect(page.locator("h3").first).to_contain_text("16 × h200")

    _click_link(page, "GPT-3 175B · 300B tokens")  # back to the default view: the URL empties, the controls follow
    expect(page.locator("h3").first).to_have_text(views.TimeToTrainView().describe())
    assert _query(page) == {}
    assert _select_value(page, "Accelerator") == "a800-80gb"
    _set_number(page, "Devices", "512")
    page.wait_for_url("**n=512**")
    expect(page.locator("h3").first).to_contain_text("512 × a800-80gb")
    assert_no_exception(page)


@pytest.mark.parametrize("index", [1])  # Speedups' FSDP preset (tests/views/test_links.py: every headline)
def test_overview_headline_lands_whole_and_the_next_edit_takes(server: Server, page: Page, index: int) -> None:
    headline = views.HEADLINES[index]
    open_app(page, server, "/")
    _click_link(page, headline.title)

    page.wait_for_url(f"**/{headline.link.page.slug}**")
    assert _query(page) == headline.link.query
    expect(page.locator("h3").first).to_have_text(headline.state.describe())
    assert table_cells(page)
    screenshot(page, f"link-headline-{headline.link.page.slug}")
    if headline.link.page.slug == "speedups":
        expect(page.locator('[data-testid="stButtonGroup"] button[aria-checked="true"]')).to_have_text("FSDP vs 3D")
        page.locator('[data-testid="stButtonGroup"] button').filter(has_text="RLHF").click()
        settle(page)
        page.wait_for_url("**p=rlhf**")
    else:
        assert _select_value(page, "Normalize").startswith("as MFU")
        box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text("Metric", exact=True))
        box.locator("input").first.click()
        page.get_by_role("option", name="model TFLOP/s/device", exact=True).click()
        settle(page)
        page.wait_for_url("**mt=model_tflops_per_device**")
        assert _query(page)["n"] == "mfu"
    state = urlstate.from_query(headline.link.page.state, _query(page))
    expect(page.locator("h3").first).to_have_text(state.describe())
    assert_no_exception(page)


def test_sources_link_lands_whole_and_the_next_edit_takes(server: Server, page: Page) -> None:
    link = views.links.source("nv_blog_nemo_h200_2023")
    open_app(page, server, link.href)
    assert _query(page) == link.query
    assert _select_value(page, "Source") == "nv_blog_nemo_h200_2023"
    expect(page.locator("h3").first).to_have_text(link.state.describe())
    screenshot(page, "link-source")

    box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text("Source", exact=True))
    box.locator("input").first.click()
    page.get_by_role("option", name="every source", exact=True).click()
    settle(page)
    expect(page.locator("h3").first).to_have_text(views.SourcesView().describe())
    assert _query(page) == {}
    assert_no_exception(page)


@pytest.fixture(scope="module")
def a_run(server: Server) -> int:
    log = LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"
    engine = server.engine()
    out = pipeline.commit(engine, Path(log).read_bytes(), log.name, RunConfig())
    engine.dispose()
    assert out.run_id is not None
    return out.run_id


def test_open_a_run_link_lands_whole_and_the_next_edit_takes(server: Server, new_page: Callable[[], Page],
                                                             a_run: int) -> None:
    page = open_app(new_page(), server, "/runs")
    _click_link(page, f"Run {a_run} ·")

    page.wait_for_url(f"**run={a_run}**")
    assert _query(page) == views.links.run(a_run).query
    expect(page.locator("h3").first).to_contain_text(str(a_run))
    screenshot(page, "link-open-a-run")
    _set_number(page, "Window first step (-1 = rule)", "20")
    page.wait_for_url("**w0=20**")
    assert _query(page)["run"] == str(a_run)
    assert_no_exception(page)
