"""Tables that read right in a 1440x1000 window: on every page and section, the compared quantity, its value, the
verdict or warning and the source are drawn whole inside the first screen's width (the grid draws, and lists in its
accessible header, only the columns it paints; a column is whole when a painted column follows it or it is the
table's last). A screenshot of each table as the window shows it is kept in test-artifacts/browser/."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import store
from tests.browser.conftest import (
    ARTIFACTS,
    LOGS,
    VIEWPORT,
    Server,
    assert_no_exception,
    open_app,
    select,
    settle,
    start_server,
    stop_server,
    table_cells,
)

pytestmark = pytest.mark.browser

RUNS = ("nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt", "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt",
        "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log",
        "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log")  # the last with MFU computed, so the run list has its column
# (path, the columns that must be whole on the first screen, as the table labels them)
KEY_COLUMNS = (
    ("overview", ("kind", "result rows", "sources")),
    ("speedups", ("model", "baseline", "candidate", "speedup (x)", "caveats", "source")),
    ("speedups?p=fsdp", ("model", "baseline", "candidate", "speedup (x)", "caveats", "source")),
    ("accelerators", ("accelerator", "model", "normalized", "normalized unit", "warning", "source")),
    ("accelerators?s=head", ("pair", "model", "metric", "ratio (second / first)", "caveats", "source")),
    ("accelerators?s=catalog", ("accelerator", "bf16 TFLOPS", "fp8 TFLOPS", "memory (GB)", "TDP (W)", "source")),
    ("scaling", ("model", "accelerator", "devices", "scaling efficiency (%)", "value", "source")),
    ("scaling?s=sensitivity", ("model", "accelerator", "value", "unit", "baseline", "source")),
    ("time-to-train", ("devices", "time (days)", "tokens/s/device", "basis")),
    ("runs", ("id", "file", "model", "accelerator", "devices", "tokens/s/device", "MFU (%)", "time to train (s)")),
    ("audit", ("claim", "metric", "reported", "recomputed", "difference (%)", "verdict", "explanation", "source")),
    ("mlperf", ("benchmark", "time to train (min)", "submitter", "accelerator × count", "run")),
    ("sources", ("id", "kind", "url")),
    ("sources?src=nv_blog_nemo_h200_2023", ("id", "metric", "value", "unit", "model", "accelerator", "devices")),
)


@pytest.fixture(scope="module")
def tables_server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[Server]:
    """A server on the seeded store with two MLPerf results and a NeMo log ingested."""
    template = tmp_path_factory.mktemp("tables-template") / "perfledger.duckdb"
    shutil.copy(seeded_template, template)
    engine = store.engine_from_url(f"duckdb:///{template}")
    for name in RUNS:
        pipeline.ingest_path(engine, LOGS / name)
    engine.dispose()
    proc, srv = start_server(tmp_path_factory.mktemp("tables-server"), template)
    yield srv
    stop_server(proc)


def whole_columns(page: Page) -> tuple[list[str], int]:
    """The labels of the first table's columns painted whole in the window, and how many columns it has."""
    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    headers = table.locator('[role="columnheader"]')
    headers.first.wait_for(state="attached")
    box = table.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], box
    count = int(table.locator('[role="grid"]').first.get_attribute("aria-colcount") or 0)
    painted = [(int(h.get_attribute("aria-colindex") or 0), h.inner_text()) for h in headers.all()]
    last = max(i for i, _ in painted)
    return [label for i, label in painted if i < last or i == count], count


@pytest.mark.parametrize(("path", "key"), KEY_COLUMNS, ids=[p for p, _ in KEY_COLUMNS])
def test_the_key_columns_are_whole_on_the_first_screen(path: str, key: tuple[str, ...], tables_server: Server,
                                                       page: Page) -> None:
    open_app(page, tables_server, f"/{path}")
    assert_no_exception(page)
    whole, count = whole_columns(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"table-1440-{path.replace('?', '-').replace('=', '-')}.png"))
    missing = [c for c in key if c not in whole]
    assert not missing, f"{path}: {missing} not whole on the first screen; painted whole: {whole} of {count} columns"


def test_a_sort_chosen_on_the_page_goes_to_the_url_and_the_link_reopens_it(tables_server: Server, page: Page,
                                                                          new_page: Callable[[], Page]) -> None:
    open_app(page, tables_server, "/mlperf")
    select(page, "Sort rows by", "time to train (min)")
    page.get_by_text("Largest first").click()
    settle(page)
    assert "sort=time+to+train+%28min%29" in page.url or "sort=time%20to%20train%20%28min%29" in page.url, page.url
    assert "desc=1" in page.url
    again = new_page()
    open_app(again, tables_server, page.url.removeprefix(tables_server.base))
    assert_no_exception(again)
    expect(again.get_by_role("combobox", name="Sort rows by")).to_have_value("time to train (min)")
    cells = [c.strip() for c in table_cells(again, having="52.46")]
    minutes = [c for c in cells if c.startswith(("52.46", "23.52"))]  # the grid's accessible copy: unformatted
    assert [m[:5] for m in minutes] == ["52.46", "23.52"]  # the GPT-3 result's 52.46 min above the LoRA's 23.52
    again.screenshot(path=str(ARTIFACTS / "table-1440-mlperf-sorted.png"))


def test_a_results_permalink_opens_with_every_field(tables_server: Server, page: Page) -> None:
    open_app(page, tables_server, "/sources?src=nv_blog_nemo_h200_2023")
    link = page.locator('[data-testid="stDataFrame"] a[href*="result="]').first
    href = link.get_attribute("href") if link.count() else "/sources?result=2"
    open_app(page, tables_server, href.removeprefix(tables_server.base) if href else "/sources?result=2")
    assert_no_exception(page)
    expect(page.get_by_text("Shown in:")).to_be_visible()
    cells = table_cells(page, having="locator")
    assert "note" in cells and "source URL" in cells  # every field by its display name
    page.screenshot(path=str(ARTIFACTS / "result-permalink.png"), full_page=True)
