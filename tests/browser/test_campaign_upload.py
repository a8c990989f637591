"""In Chromium: a zipped folder sent through the Campaigns page's upload box (written to disk by the upload route)
is imported as one campaign, with its refusals said, as `python -m ingest DIR` imports the folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle
from tests.screens.test_campaign_upload import SWEEP, zipped

pytestmark = pytest.mark.browser


def test_a_zipped_sweep_sent_through_the_upload_box_is_stored_as_one_campaign(server: Server, page: Page,
                                                                               tmp_path: Path) -> None:
    archive = tmp_path / "sweep.zip"
    archive.write_bytes(zipped(SWEEP))
    open_app(page, server, "/campaigns")
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Import a folder of runs as campaigns")
    panel.locator("summary").click()
    panel.locator('input[type="file"]').set_input_files(str(archive))
    expect(panel.locator(".status")).to_contain_text("sweep.zip")
    panel.get_by_role("button", name="Import the folder").click()
    expect(panel.get_by_text("(sweep, 5 attempts): pick it below.")).to_be_visible(timeout=120_000)
    expect(panel).to_contain_text("Refused: core.bin: not a log format")
    settle(page)
    assert_no_exception(page)
    screenshot(page, "campaign-upload-zip")
