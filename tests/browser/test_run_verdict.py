"""The run page in Chromium at 1440 px: the verdict (tokens/s and TFLOP/s per device, MFU, the ratio to the
published figure and which one) is above the fold, before the run's controls and charts; the goodput bar draws."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ingest import pipeline
from perfledger import store
from perfledger.records import RunConfig
from tests.browser.conftest import (
    LOGS,
    VIEWPORT,
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.browser
NEMO = "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"


@pytest.fixture(scope="module")
def verdict_server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[tuple[Server, int]]:
    """A server on the seeded store with the NeMo Llama 3 8B B200 log ingested, given its model."""
    template = tmp_path_factory.mktemp("verdict-template") / "perfledger.duckdb"
    shutil.copy(seeded_template, template)
    engine = store.engine_from_url(f"duckdb:///{template}")
    with pipeline.prepare((LOGS / NEMO).read_bytes(), NEMO, RunConfig(model="llama3-8b"), engine=engine,
                          limit=2**30) as prepared:
        run_id = store.save_run(engine, prepared).run_id
    engine.dispose()
    proc, srv = start_server(tmp_path_factory.mktemp("verdict-server"), template)
    yield srv, run_id
    stop_server(proc)


def _top(page: Page, text: str) -> float:
    box = page.get_by_text(text, exact=False).first.bounding_box()
    assert box is not None, text
    return float(box["y"] + box["height"])


def test_the_verdict_is_above_the_fold_at_1440_px(verdict_server: tuple[Server, int], page: Page) -> None:
    server, run_id = verdict_server
    open_app(page, server, f"/runs?run={run_id}")
    metrics = page.locator('[data-testid="stMetric"]')
    expect(metrics.first).to_contain_text("Tokens/s per device")
    expect(metrics.first).to_contain_text("30,298.7")  # derived: 6 significant digits
    expect(metrics.nth(3)).to_contain_text("98.9378%")
    sentence = page.get_by_text("98.9% of the published 30,624 tokens/s per device", exact=False).first
    expect(sentence).to_be_visible()
    for text in ("Tokens/s per device", "Model TFLOP/s per device", "MFU against 4500 TFLOP/s dense fp8",
                 "98.9% of the published 30,624"):
        assert _top(page, text) <= VIEWPORT["height"], f"{text!r} is below the fold"
    assert _top(page, "98.9% of the published") < _top(page, "Overlay with")  # the verdict before the controls
    expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_be_visible()  # the goodput bar
    assert_no_exception(page)
    page.screenshot(path=str(screenshot(page, "run-verdict-full").with_name("run-verdict-fold.png")))
