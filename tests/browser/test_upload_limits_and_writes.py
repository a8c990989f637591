"""In Chromium: a dashboard other machines can reach writes nothing from the browser without an upload token, and
its sidebar says how to enable writing; the upload limit is one limit in MiB, that the browser lets through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from ingest import upload_route
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

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
MIB = 2**20


@pytest.fixture()
def reachable_server(tmp_path: Path, seeded_template: Path) -> Iterator[Server]:
    """A dashboard on every address (as `--server.address 0.0.0.0` serves it) with no upload token."""
    proc, srv = start_server(tmp_path, seeded_template, address="0.0.0.0")
    yield srv
    stop_server(proc)


@pytest.fixture()
def one_mib_server(tmp_path: Path, seeded_template: Path) -> Iterator[Server]:
    proc, srv = start_server(tmp_path, seeded_template, {"PERFLEDGER_MAX_UPLOAD_MB": "1"})
    yield srv
    stop_server(proc)


def _upload_panel(page: Page) -> Locator:
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    panel.locator("summary").click()
    return panel


def test_a_reachable_server_without_a_token_is_read_only_in_the_browser_and_says_how_to_write(
        reachable_server: Server, page: Page) -> None:
    open_app(page, reachable_server, "/runs")
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text("read-only in the browser")
    expect(sidebar).to_contain_text("Set PERFLEDGER_UPLOAD_TOKEN, or serve on this machine alone")
    panel = _upload_panel(page)
    expect(panel).to_contain_text("Writing from the browser is off")
    expect(page.locator('input[type="file"]')).to_have_count(0)
    assert_no_exception(page)
    screenshot(page, "upload-refused-reachable-without-token")
    # The upload route takes bodies for tickets given to sessions that may write: here, none.
    refused = page.request.put(f"{reachable_server.base}{upload_route.PATH}any-ticket", data=b"iteration 1\n",
                               headers={upload_route.NAME_HEADER: "x.log"})
    assert refused.status == 403 and refused.json() == {"error": upload_route.EXPIRED}


def padded_log(folder: Path, size: int) -> Path:
    raw = MEGATRON.read_bytes()
    path = folder / f"megatron_{size}.out"
    path.write_bytes(raw + b"#" * (size - len(raw) - 1) + b"\n")
    return path


def test_a_file_of_the_mib_limit_passes_the_browser_and_one_byte_more_gets_the_cli_sentence(
        one_mib_server: Server, page: Page, tmp_path: Path) -> None:
    open_app(page, one_mib_server, "/runs")
    panel = _upload_panel(page)
    fits, over = padded_log(tmp_path, MIB), padded_log(tmp_path, MIB + 1)  # both over 1 MB as the browser counts
    panel.locator('input[type="file"]').set_input_files(str(fits))
    settle(page)
    expect(panel).to_contain_text("Steady tokens/s/device")
    panel.locator('input[type="file"]').set_input_files(str(over))
    settle(page)
    expect(page.locator('[data-testid="stAlertContentError"]')).to_contain_text(
        f"{over.name}: larger than the 1 MiB limit once decompressed; nothing was stored")
    expect(page.get_by_text("File must be")).to_have_count(0)  # never the browser's own refusal
    assert_no_exception(page)
    screenshot(page, "upload-past-the-mib-limit")
