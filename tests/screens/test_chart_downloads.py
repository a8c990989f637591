"""Every chart a page draws offers PNG and SVG files, named after the page, the chart and the view, drawn only when
the file is asked for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from sqlalchemy import Engine
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import urlstate, views
from perfledger.views.output import ImageFormat

FORMATS: tuple[ImageFormat, ...] = ("png", "svg")
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
CHART_PAGES = {  # slug -> (query, charts the page draws for it)
    "overview": ("by=accelerator", {"counts"}),
    "speedups": ("p=fsdp", {"bars"}),
    "accelerators": ("n=mfu&m=llama2-70b,llama2-7b", {"bars"}),
    "scaling": ("m=gpt2-xl&c=stored", {"stored"}),
    "time-to-train": ("m=llama2-70b&tok=1000000000&a=h200&n=8&mode=measured&usd=4", {"devices"}),
}


@pytest.fixture()
def deferred(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], Any]]:
    """The callables handed to st.download_button for deferred files, by file name (none is called by the page)."""
    seen: dict[str, Callable[[], Any]] = {}
    original = MediaFileManager.add_deferred

    def spy(self: MediaFileManager, data_callable: Callable[[], Any], mimetype: str | None, coordinates: str,
            file_name: str | None = None, **kwargs: Any) -> str:
        if file_name:
            seen[file_name] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    return seen


def _chart_files(found: dict[str, Callable[[], Any]], slug: str) -> dict[str, Callable[[], Any]]:
    return {name: make for name, make in found.items() if name.startswith(f"perfledger-{slug}-")}


def _view_query(slug: str, query: str) -> str:
    return urlstate.query_string(views.state_from_query(slug, parse_qsl(query)))


@pytest.mark.parametrize("slug", sorted(CHART_PAGES))
def test_each_chart_offers_png_and_svg_named_after_the_page_chart_and_view(
        slug: str, seeded_url: str, deferred: dict[str, Callable[[], Any]], open_page: Callable[..., AppTest]) -> None:
    query, names = CHART_PAGES[slug]
    at = open_page(slug, query)
    assert not at.exception, at.exception
    expected = {views.chart_file_name(slug, name, _view_query(slug, query), fmt) for name in names for fmt in FORMATS}
    assert expected <= set(deferred), sorted(deferred)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("PNG") == labels.count("SVG") == len(names)


def test_the_files_are_a_png_and_an_svg_of_the_chart_on_screen(
        seeded_url: str, deferred: dict[str, Callable[[], Any]], open_page: Callable[..., AppTest]) -> None:
    query = CHART_PAGES["speedups"][0]
    assert not open_page("speedups", query).exception
    png = deferred[views.chart_file_name("speedups", "bars", _view_query("speedups", query), "png")]()
    svg = deferred[views.chart_file_name("speedups", "bars", _view_query("speedups", query), "svg")]()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert svg.lstrip().startswith(b"<svg") and b"Speedup of the candidate" in svg  # the title, as text


def test_a_run_page_offers_each_step_chart(
        seeded_engine: Engine, deferred: dict[str, Callable[[], Any]], open_page: Callable[..., AppTest]) -> None:
    run = pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out").run_id
    at = open_page("runs", f"run={run}")
    assert not at.exception, at.exception
    files = {name for name in deferred if name.startswith("perfledger-runs-")}
    assert {views.chart_file_name("runs", chart, f"run={run}", fmt) for chart in ("step-time", "model_tflops_per_device")
            for fmt in FORMATS} <= files, sorted(files)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("PNG") == labels.count("SVG") == len(files) // 2
