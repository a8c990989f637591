"""In Chromium: "Store this run" stores what the upload form shows (a choice never applied included) and confirms
with the run's link; a claims file previews as claims, with its rows to add and its unlinked names."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from perfledger import store
from tests.browser.conftest import LOGS, Server, assert_no_exception, open_app, screenshot, settle
from tests.screens.test_upload_store import _claims_with_an_unknown_accelerator

pytestmark = pytest.mark.browser

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def _upload(page: Page, path: Path) -> None:
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    panel.locator("summary").click()
    panel.locator('input[type="file"]').set_input_files(str(path))
    settle(page)


def test_a_choice_never_applied_is_stored_and_the_run_is_confirmed_with_its_link(
        server: Server, page: Page, tmp_path: Path) -> None:
    log = tmp_path / "megatron_for_store.out"
    log.write_bytes(MEGATRON.read_bytes() + b"# a copy of its own\n")
    open_app(page, server, "/runs")
    _upload(page, log)
    expect(page.get_by_text("Steady tokens/s/device")).to_be_visible()
    box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text("Accelerator (catalog id)"))
    box.locator('[role="combobox"], input').first.click()
    page.keyboard.type("gh200")
    page.get_by_role("option", name="gh200", exact=True).click()  # then straight to "Store this run"
    page.get_by_role("button", name="Store this run").click()
    page.wait_for_url("**run=*")
    settle(page)
    run_id = int(page.url.rsplit("run=", 1)[1].split("&")[0])
    confirmation = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text=f"Stored as run {run_id}")
    expect(confirmation.get_by_role("link", name="open it")).to_have_attribute("href", f"/runs?run={run_id}")
    row = store.run(server.engine(), run_id)
    assert row is not None and row.config["accelerator"] == "gh200"
    assert_no_exception(page)
    screenshot(page, "upload-stored-with-its-link")


def test_a_claims_file_previews_as_claims_with_its_unlinked_names(server: Server, page: Page, tmp_path: Path) -> None:
    open_app(page, server, "/runs")
    _upload(page, _claims_with_an_unknown_accelerator(tmp_path))
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    expect(panel).to_contain_text("claims file")
    expect(panel).to_contain_text("To add")
    expect(panel).to_contain_text("Mystery X1000 accelerator")
    expect(panel).not_to_contain_text("0 steps")
    expect(page.get_by_role("button", name="Store these claims")).to_be_visible()
    assert_no_exception(page)
    screenshot(page, "upload-claims-preview")
