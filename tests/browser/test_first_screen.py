"""The first screen of every page holds its answer, its key columns whole: in a 1440 x 1000 window, the page's answer
(its chart, table or headline figures, the element a page draws under `st.container(key="answer")`) starts within
the window with room to be read, its controls above it in a row or two and its warnings folded or below (Speedups'
audit warnings had filled the first screen; Scaling's showed its controls and a legend only); and its table draws
the compared quantity, its value, the verdict or warning and the source whole inside the window's width (the grid
draws, and lists in its accessible header, only the columns it paints; a column is whole when a painted column
follows it or it is the table's last). Each page is opened once for both. A screenshot of each first screen is
kept in test-artifacts/browser/first-screen-*.png to be looked at."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import store
from perfledger.views.registry import PAGES
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
ANSWER = ".st-key-answer"
FIRST_FIGURE = '[data-testid="stVegaLiteChart"], [data-testid="stDataFrame"], [data-testid="stMetric"]'
DRAWN = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg, ' \
        '[data-testid="stDataFrame"] canvas, [data-testid="stMetric"]'
READABLE_PX = 320  # at least this much of the answer shows in the first screen
SPEEDUP_COLUMNS = ("model", "baseline", "candidate", "speedup (x)", "caveats", "source")
# every page and section, with the columns of its first table that must be whole on the first screen, as labelled
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "overview": ("kind", "result rows", "sources"),
    "speedups": SPEEDUP_COLUMNS,
    "speedups?p=fsdp": SPEEDUP_COLUMNS,
    "accelerators": ("accelerator", "model", "normalized", "normalized unit", "warning", "source"),
    "accelerators?s=head": ("pair", "model", "metric", "ratio (second / first)", "caveats", "source"),
    "accelerators?s=catalog": ("accelerator", "bf16 TFLOPS", "fp8 TFLOPS", "memory (GB)", "TDP (W)", "source"),
    "scaling": ("model", "accelerator", "devices", "scaling efficiency (%)", "value", "source"),
    "scaling?s=sensitivity": ("model", "accelerator", "value", "unit", "baseline", "source"),
    "time-to-train": ("devices", "time (days)", "tokens/s/device", "basis"),
    "runs": ("id", "file", "model", "accelerator", "devices", "tokens/s/device", "MFU (%)", "time to train (s)"),
    "audit": ("claim", "metric", "reported", "recomputed", "difference (%)", "verdict", "explanation", "source"),
    "mlperf": ("benchmark", "time to train (min)", "submitter", "accelerator × count", "run"),
    "sources": ("id", "kind", "url"),
    "sources?src=nv_blog_nemo_h200_2023": ("id", "metric", "value", "unit", "model", "accelerator", "devices"),
}
VIEWS = tuple(dict.fromkeys((*(p.slug for p in PAGES), *KEY_COLUMNS, "scaling?c=stored", "runs?run=1",
                             "runs?run=4", "history?y=mfu",
                             "time-to-train?m=llama2-70b&tok=1e9&a=h200&n=8&mode=measured&usd=4")))


def _top(element: Any) -> str:
    box = element.bounding_box()
    return f"{box['y']:.0f}" if box else "no"


@pytest.fixture(scope="module")
def runs_server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[Server]:
    """A server on the seeded store with two MLPerf results (runs 1, 2) and two NeMo logs (3, 4) ingested."""
    template = tmp_path_factory.mktemp("first-screen-template") / "perfledger.duckdb"
    shutil.copy(seeded_template, template)
    engine = store.engine_from_url(f"duckdb:///{template}")
    for name in RUNS:
        pipeline.ingest_path(engine, LOGS / name)
    engine.dispose()
    proc, srv = start_server(tmp_path_factory.mktemp("first-screen-server"), template)
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


@pytest.mark.parametrize("path", VIEWS)
def test_the_first_screen_holds_the_pages_answer_with_its_key_columns_whole(path: str, runs_server: Server,
                                                                            page: Page) -> None:
    open_app(page, runs_server, f"/{path}")
    assert_no_exception(page)
    page.locator(DRAWN).first.wait_for()  # a chart, table or figure drawn, not a placeholder
    marked = page.locator(ANSWER)
    answer = marked.first if marked.count() else page.locator(FIRST_FIGURE).first  # a page that marks none
    assert marked.count(), f"{path}: no answer marked; its first chart or table starts {_top(answer)} px down"
    answer.locator(DRAWN).first.wait_for()
    page.wait_for_timeout(500)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"first-screen-{path.replace('?', '-').replace('=', '-').replace('&', '_')}.png"))
    box = answer.bounding_box()
    assert box is not None and box["height"] > 0, path
    assert box["y"] <= VIEWPORT["height"] - READABLE_PX, f"{path}: the answer starts {box['y']:.0f} px down"
    if path in KEY_COLUMNS:
        whole, count = whole_columns(page)
        missing = [c for c in KEY_COLUMNS[path] if c not in whole]
        assert not missing, f"{path}: {missing} not whole on the first screen; painted whole: {whole} of {count}"


def test_a_sort_chosen_on_the_page_goes_to_the_url_and_the_link_reopens_it(runs_server: Server, page: Page,
                                                                          new_page: Callable[[], Page]) -> None:
    open_app(page, runs_server, "/mlperf")
    select(page, "Sort rows by", "time to train (min)")
    page.get_by_text("Largest first").click()
    page.wait_for_url(lambda url: "desc=1" in url)  # the rerun that writes the URL may start late on a busy host
    settle(page)
    assert "sort=time+to+train+%28min%29" in page.url or "sort=time%20to%20train%20%28min%29" in page.url, page.url
    again = new_page()
    open_app(again, runs_server, page.url.removeprefix(runs_server.base))
    assert_no_exception(again)
    expect(again.get_by_role("combobox", name="Sort rows by")).to_have_value("time to train (min)")
    cells = [c.strip() for c in table_cells(again, having="52.46")]
    minutes = [c for c in cells if c.startswith(("52.46", "23.52"))]  # the grid's accessible copy: unformatted
    assert [m[:5] for m in minutes] == ["52.46", "23.52"]  # the GPT-3 result's 52.46 min above the LoRA's 23.52
    again.screenshot(path=str(ARTIFACTS / "table-1440-mlperf-sorted.png"))


def test_a_results_permalink_opens_with_every_field(runs_server: Server, page: Page) -> None:
    open_app(page, runs_server, "/sources?src=nv_blog_nemo_h200_2023")
    link = page.locator('[data-testid="stDataFrame"] a[href*="result="]').first
    href = link.get_attribute("href") if link.count() else "/sources?result=2"
    open_app(page, runs_server, href.removeprefix(runs_server.base) if href else "/sources?result=2")
    assert_no_exception(page)
    expect(page.get_by_text("Shown in:")).to_be_visible()
    cells = table_cells(page, having="locator")
    assert "note" in cells and "source URL" in cells  # every field by its display name
    page.screenshot(path=str(ARTIFACTS / "result-permalink.png"), full_page=True)
