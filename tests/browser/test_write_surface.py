"""In Chromium, the write surface as an attacker on this machine meets it: a file chosen while a freshly started
server's first run goes is taken, not ignored; a page of another site whose name points at 127.0.0.1 (DNS
rebinding) gets no upload box and its PUT is refused; a file's name or a claims file's text in the upload's error
box is text, never Markdown; a table's toolbar offers no CSV download of its cells as they are, and the page's
Download CSV (the same bytes as `perfledger export`) writes a formula as text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Locator, Page, expect

from ingest import pipeline
from perfledger import views
from perfledger.records import RunConfig
from tests.browser.conftest import (
    LOGS,
    REBOUND,
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    settle,
    start_server,
    stop_server,
)
from tests.cli.test_audit_cli import HOSTILE_SOURCE, formula_cells

pytestmark = pytest.mark.browser

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
CLAIMS = LOGS / "claims_example.csv"
MARKDOWN = "**bold** :red[red] $x^2$ [a site](www.evil.example) www.evil.example"


def _upload_panel(page: Page) -> Locator:
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    panel.locator("summary").click()
    return panel


def test_a_file_chosen_while_a_fresh_servers_first_run_goes_is_previewed(untouched_server: Server,
                                                                         page: Page) -> None:
    """Three of three such files were ignored: the box's state came while the page's first run still went."""
    untouched_server.opened.append("/runs")
    page.goto(untouched_server.url("/runs"))  # not settled: the file is chosen as soon as the box is there
    panel = _upload_panel(page)
    panel.locator('input[type="file"]').set_input_files(str(MEGATRON))
    expect(panel).to_contain_text("Steady tokens/s/device", timeout=90_000)
    settle(page)
    assert_no_exception(page)


def test_a_page_of_another_site_rebound_to_this_machine_gets_no_write(server: Server,
                                                                     new_page: Callable[[], Page]) -> None:
    local = open_app(new_page(), server, "/runs")  # this machine's own page: its box sends under its own ticket
    with local.expect_request(lambda r: r.method == "PUT") as sent:
        _upload_panel(local).locator('input[type="file"]').set_input_files(str(MEGATRON))
    ticket_url = urlsplit(sent.value.url).path
    rebound = server.url("/runs").replace("127.0.0.1", REBOUND)
    server.opened.append(rebound)
    page = new_page()
    page.goto(rebound)
    settle(page)
    panel = _upload_panel(page)
    expect(panel).to_contain_text(f"Writing from the browser is off for this page: it was opened as "
                                  f"{urlsplit(rebound).netloc} (Host)")
    expect(panel.locator('input[type="file"]')).to_have_count(0)  # no box, so no ticket for this session
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("read-only in the browser")
    screenshot(page, "upload-refused-rebound-name")
    answer = page.evaluate("""async (url) => {
        const r = await fetch(url, {method: "PUT", body: "iteration 1\\n", headers: {"X-Upload-Name": "x.log"}});
        return [r.status, await r.text()];
    }""", ticket_url)  # a live ticket, sent as the rebound page sends: its own Host and Origin
    assert answer[0] == 403 and "Writing from the browser is off for this page" in answer[1]


@pytest.mark.parametrize(("name", "raw"), [
    (f"{MARKDOWN}.log", bytes(range(256)) * 16),
    ("claims.csv", f"metric,value,unit,model,accelerator,source_id\n"
     f"tokens_per_s,1,tokens/s,{MARKDOWN} https://evil.example,z,w\n".encode()),  # a model name no catalog row knows
], ids=["file-name", "claims-text"])
def test_the_upload_error_box_shows_a_files_name_and_text_as_typed(server: Server, page: Page, tmp_path: Path,
                                                                   name: str, raw: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(raw)
    open_app(page, server, "/runs")
    _upload_panel(page).locator('input[type="file"]').set_input_files(str(path))
    # a file it cannot read is an error; a claims row it keeps with a name it cannot link, a warning
    alert = page.locator('[data-testid="stAlertContentError"], [data-testid="stAlertContentWarning"]').filter(
        has_text="[a site](www")
    expect(alert).to_have_count(1)
    settle(page)
    said = alert.inner_text().replace("\u2060", "")
    assert MARKDOWN in said and (name == "claims.csv") == ("https://evil.example" in said)
    for rendered in ("a", "strong", "em", ".katex", "span[style*=color]", "[class*=Colored]"):
        expect(alert.locator(rendered)).to_have_count(0)
    screenshot(page, f"upload-error-plain-{path.suffix.lstrip('.')}")


@pytest.fixture()
def hostile_claims_server(tmp_path: Path, seeded_template: Path) -> Iterator[Server]:
    """A dashboard whose store holds claims under a source id that is a spreadsheet formula."""
    proc, srv = start_server(tmp_path, seeded_template)
    lines = CLAIMS.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("metric,"))
    quoted = '"' + HOSTILE_SOURCE.replace('"', '""') + '"'
    rows = [line.replace("nv_blog_nemo_h200_2023", quoted) for line in lines[header + 1:]]
    engine = srv.engine()
    pipeline.commit(engine, "\n".join([lines[header], *rows, ""]).encode(), "claims.csv", RunConfig())
    engine.dispose()
    yield srv
    stop_server(proc)


def test_no_table_downloads_its_cells_as_they_are_and_the_pages_csv_is_spreadsheet_safe(
        hostile_claims_server: Server, page: Page) -> None:
    open_app(page, hostile_claims_server, "/sources")
    table = page.locator('[data-testid="stDataFrame"]').first
    table.hover()
    toolbar = page.locator('[data-testid="stElementToolbar"]').first
    expect(toolbar.get_by_role("button", name="Fullscreen")).to_be_visible()
    expect(toolbar.get_by_role("button", name="Download as CSV")).to_have_count(0)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    got = Path(info.value.path()).read_bytes()
    engine = hostile_claims_server.engine()
    assert got == views.export("sources", urlsplit(page.url).query, engine)
    engine.dispose()
    assert formula_cells(got.decode()) == [] and ("'" + HOSTILE_SOURCE.replace('"', '""')).encode() in got
