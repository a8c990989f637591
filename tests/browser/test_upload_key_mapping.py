"""A metrics file whose names the key vocabulary does not know: refused with its reason, then read after its names
are mapped in the upload form (rows added to the data folder's vocabulary), previewed and stored."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from perfledger.settings import DEFAULT_DATA_DIR
from tests.browser.conftest import Server, assert_no_exception, open_app, screenshot, settle, start_server, stop_server
from tests.browser.test_upload import _run_count, _upload

pytestmark = pytest.mark.browser


@pytest.fixture()
def own_data_server(tmp_path: Path, seeded_template: Path) -> Iterator[tuple[Server, Path]]:
    data = tmp_path / "data"  # the whole vocabulary (keys, frameworks, config keys), the store and logs left out
    shutil.copytree(DEFAULT_DATA_DIR, data, ignore=shutil.ignore_patterns("*.duckdb*", "logs"))
    proc, srv = start_server(tmp_path, seeded_template, {"PERFLEDGER_DATA_DIR": str(data)})
    yield srv, data / "metric_keys.csv"
    stop_server(proc)


def test_unknown_names_are_mapped_in_the_form_and_the_file_is_then_read(own_data_server: tuple[Server, Path],
                                                                       page: Page, tmp_path: Path) -> None:
    server, vocabulary = own_data_server
    log = tmp_path / "novel_metrics.jsonl"
    log.write_text("".join(json.dumps({"it": s, "objective": 2.0 - s / 100, "ms_per_it": 800.0}) + "\n"
                           for s in range(1, 31)))
    open_app(page, server, "/runs")
    _upload(page, log)
    expect(page.locator('[data-testid="stAlertContentError"]')).to_contain_text("not a log format")
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Map names the key vocabulary does not know").last
    expect(panel).to_be_visible()
    for name, column, unit in (("it", "step", "count"), ("objective", "loss", "no unit"),
                               ("ms_per_it", "step_time_s", "ms")):
        panel.get_by_label(f"column for {name}").click()
        page.get_by_role("option", name=column, exact=True).click()
        panel.get_by_label(f"unit for {name}").click()
        page.get_by_role("option", name=unit, exact=True).click()
    panel.get_by_label("Framework that logs them (optional)").fill("novel")
    screenshot(page, "upload-key-mapping")
    panel.get_by_role("button", name="Add to the vocabulary and read again").click()
    settle(page)
    preview = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    expect(preview).to_contain_text("metrics log · 30 steps")
    expect(preview).to_contain_text("Median step time0.8 s")
    assert_no_exception(page)
    assert "novel,it,step,count,,yes," in vocabulary.read_text()  # names no row knew identify the framework
    before = _run_count(server)
    page.get_by_role("button", name="Store this run").click()
    page.wait_for_url("**run=*")
    assert _run_count(server) == before + 1
