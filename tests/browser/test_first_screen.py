"""The first screen of every page holds its answer: in a 1440 x 1000 window, the page's answer (its chart, table or
headline figures, the element a page draws under `st.container(key="answer")`) starts within the window with room
to be read, its controls above it in a row or two and its warnings folded or below (Speedups' audit warnings had
filled the first screen; Scaling's showed its controls and a legend only). A screenshot of each first screen is kept
in test-artifacts/browser/first-screen-*.png to be looked at."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

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
    start_server,
    stop_server,
)

pytestmark = pytest.mark.browser

RUNS = ("gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log", "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt")
ANSWER = ".st-key-answer"
FIRST_FIGURE = '[data-testid="stVegaLiteChart"], [data-testid="stDataFrame"], [data-testid="stMetric"]'
DRAWN = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg, ' \
        '[data-testid="stDataFrame"] canvas, [data-testid="stMetric"]'
READABLE_PX = 320  # at least this much of the answer shows in the first screen
VIEWS = (*(p.slug for p in PAGES), "speedups?p=fsdp", "accelerators?s=head", "scaling?c=stored",
         "scaling?s=sensitivity", "runs?run=1", "runs?run=2", "history?y=mfu",
         "time-to-train?m=llama2-70b&tok=1e9&a=h200&n=8&mode=measured&usd=4")


def _top(element: Any) -> str:
    box = element.bounding_box()
    return f"{box['y']:.0f}" if box else "no"


@pytest.fixture(scope="module")
def runs_server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[Server]:
    """A server on the seeded store with a NeMo log (run 1) and an MLPerf result (run 2) ingested."""
    template = tmp_path_factory.mktemp("first-screen-template") / "perfledger.duckdb"
    shutil.copy(seeded_template, template)
    engine = store.engine_from_url(f"duckdb:///{template}")
    for name in RUNS:
        pipeline.ingest_path(engine, LOGS / name)
    engine.dispose()
    proc, srv = start_server(tmp_path_factory.mktemp("first-screen-server"), template)
    yield srv
    stop_server(proc)


@pytest.mark.parametrize("path", VIEWS)
def test_the_first_screen_holds_the_pages_answer(path: str, runs_server: Server, page: Page) -> None:
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
