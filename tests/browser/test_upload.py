"""Upload through the Runs page's file uploader: preview, commit, listed, idempotent; bad files said plainly."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from perfledger import store
from tests.browser.conftest import LOGS, Server, assert_no_exception, open_app, screenshot, settle, table_cells

pytestmark = pytest.mark.browser

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def _upload(page: Page, path: Path) -> None:
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    if not panel.locator(".browse").is_visible():
        panel.locator("summary").click()
    panel.locator('input[type="file"]').set_input_files(str(path))
    # On disk (the box names the file), or refused as it arrived (a damaged gzip: the page says why)
    arrived = panel.locator(".status").filter(has_text=path.name)
    refused = page.locator('[data-testid="stAlertContentError"]').filter(has_text=path.name)
    expect(arrived.or_(refused).first).to_be_visible()
    settle(page)


def _run_count(server: Server) -> int:
    engine = server.engine()
    n = store.counts(engine).get("run", 0)
    engine.dispose()
    return n


@pytest.mark.parametrize(("log", "fmt"), [(MEGATRON, "megatron")])  # the flow is the same for every format
def test_upload_previews_commits_lists_and_recognizes_the_same_bytes(server: Server, page: Page, log: Path, fmt: str) -> None:
    open_app(page, server, "/runs")
    _upload(page, log)
    preview = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    expect(preview).to_contain_text(fmt)
    expect(preview).to_contain_text("tokens/s/device")
    assert_no_exception(page)
    screenshot(page, f"upload-preview-{fmt}")

    before = _run_count(server)
    page.get_by_role("button", name="Store this run").click()
    page.wait_for_url("**run=*")
    settle(page)
    assert _run_count(server) == before + 1
    run_id = int(page.url.rsplit("run=", 1)[1].split("&")[0])

    listing = open_app(page, server, "/runs")
    assert log.name in table_cells(listing)
    _upload(listing, log)
    expect(page.get_by_text(f"already stored as run {run_id}")).to_be_visible()
    expect(page.get_by_role("button", name="Store this run")).to_have_count(0)
    assert _run_count(server) == before + 1


def _bad_files(folder: Path) -> list[tuple[Path, str]]:
    garbage, cut, gz = folder / "garbage.bin", folder / "cut_megatron.out", folder / "cut_megatron.out.gz"
    garbage.write_bytes(bytes(range(256)) * 16)
    raw = MEGATRON.read_bytes()
    cut.write_bytes(raw[:3000])  # ends mid-line, before the first iteration
    gz.write_bytes(gzip.compress(raw)[:5000])
    return [(garbage, "not a log format"), (cut, "no training iteration"), (gz, "could not be decompressed")]


def test_bad_uploads_are_explained_by_file_name_and_nothing_is_stored(server: Server, page: Page, tmp_path: Path) -> None:
    open_app(page, server, "/runs")
    before = _run_count(server)
    for path, reason in _bad_files(tmp_path):
        _upload(page, path)
        alert = page.locator('[data-testid="stAlertContentError"]')
        expect(alert).to_contain_text(path.name)
        expect(alert).to_contain_text(reason)
        expect(page.get_by_role("button", name="Store this run")).to_have_count(0)
        assert_no_exception(page)
        listed = page.get_by_role("heading", name="Ingested runs").or_(page.get_by_text("No runs ingested yet"))
        expect(listed).to_be_visible()  # the rest of the page stays below the error
        screenshot(page, f"upload-rejected-{path.suffix.lstrip('.')}")
    assert _run_count(server) == before
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Sources").click()  # the page stays usable
    settle(page)
    expect(page.locator("h1").first).to_have_text("Sources")
