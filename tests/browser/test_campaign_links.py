"""A campaign on the drawn Campaigns page: it names its CI check, its configuration's link opens History with the
campaign's runs, and each run's link opens that run; every link lands with the URL and the page agreeing."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import Page, expect

from ingest.campaign import import_folder
from perfledger import urlstate
from perfledger.campaigns import CampaignSaved
from perfledger.views import links
from perfledger.views.history import HistoryView
from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle, table_cells

pytestmark = pytest.mark.browser
MLPERF = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns" / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"


@pytest.fixture(scope="module")
def submission(server: Server) -> CampaignSaved:
    engine = server.engine()
    saved = import_folder(engine, MLPERF).saved
    engine.dispose()
    assert saved is not None
    return saved


def _query(page: Page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query))


def _click_link(page: Page, text: str) -> None:
    page.locator('[data-testid="stPageLink"] a').filter(has_text=text).first.click()
    settle(page)


def test_the_campaign_names_its_ci_check_and_its_history_link_lands_on_its_runs(
        server: Server, page: Page, submission: CampaignSaved) -> None:
    open_app(page, server, f"/campaigns?c={submission.campaign_id}")
    assert_no_exception(page)
    expect(page.locator('[data-testid="stCode"]')).to_contain_text(
        f"python -m perfledger check campaign:{submission.campaign_id}")
    screenshot(page, "campaign-links")
    _click_link(page, "History of llama2-70b")

    page.wait_for_url("**/history?**")
    state = urlstate.from_query(HistoryView, _query(page))
    assert (state.model, state.accelerator, state.devices, state.metric) == ("llama2-70b", "h100-sxm", 8, "step_time_s")
    assert _query(page) == links.to(state).query
    expect(page.locator("h3").first).to_have_text(state.describe())
    cells = table_cells(page, having="result_0.txt")
    assert {f"result_{i}.txt" for i in range(10)} <= {c.rsplit("/", 1)[-1] for c in cells}
    assert_no_exception(page)


def test_each_run_of_the_campaign_opens_its_own_page(server: Server, page: Page, submission: CampaignSaved) -> None:
    open_app(page, server, f"/campaigns?c={submission.campaign_id}")
    page.get_by_text("stored runs").click()
    run_id = submission.run_ids[3]
    _click_link(page, f"Run {run_id} ·")

    page.wait_for_url(f"**/runs?run={run_id}**")
    assert _query(page) == links.run(run_id).query
    expect(page.locator("h3").first).to_contain_text(str(run_id))
    assert_no_exception(page)
