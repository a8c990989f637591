"""The page's Download CSV gives exactly the bytes of views.export (what `perfledger export` prints)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import views
from perfledger.views.registry import PAGES

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"

QUERIES = {
    "overview": "by=accelerator", "speedups": "p=fsdp", "accelerators": "n=mfu&m=llama2-70b,llama2-7b",
    "scaling": "m=gpt2-xl", "time-to-train": "m=llama2-70b&tok=1000000000&a=h200&n=8&mode=measured&usd=4",
    "runs": "", "history": "y=step_time_s", "audit": "v=inconsistent", "sources": "src=nv_blog_nemo_h200_2023",
    "campaigns": "",
}
CAMPAIGN = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns" / "bigscience_gpt2_meg_base_sweep"


@pytest.fixture()
def downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Bytes a press of each st.download_button gives, by file name (a spy on Streamlit's media file manager,
    which holds the callable of a file made when asked for)."""
    seen: dict[str, bytes] = {}
    original = MediaFileManager.add_deferred

    def spy(self: MediaFileManager, data_callable: Callable[[], Any], mimetype: str | None, coordinates: str,
            file_name: str | None = None, **kwargs: Any) -> str:
        if file_name:
            seen[file_name] = data_callable()
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    return seen


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_page_download_equals_export(slug: str, seeded_engine: Engine, downloads: dict[str, bytes], open_page: Callable[..., AppTest]) -> None:
    query = QUERIES[slug]
    if slug in ("runs", "history"):  # a real log, ingested through the same pipeline as an upload
        outcome = pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
        query = f"run={outcome.run_id}&wf=0.2" if slug == "runs" else query
    if slug == "campaigns":  # a real sweep, imported as the CLI imports a folder
        from ingest.campaign import import_folder

        saved = import_folder(seeded_engine, CAMPAIGN).saved
        query = f"c={saved.campaign_id}" if saved else ""
    at = open_page(slug, query)
    assert not at.exception, at.exception
    expected = views.export(slug, query, seeded_engine, "csv")
    assert downloads[f"perfledger-{slug}.csv"] == expected
    assert expected.count(b"\n") >= 1  # a header row, even with no data rows


def test_page_download_neutralises_a_formula_stored_in_a_result_row(
        seeded_engine: Engine, downloads: dict[str, bytes], open_page: Callable[..., AppTest]) -> None:
    import csv
    import io

    import sqlalchemy as sa

    formula = "@SUM(1+1)*cmd|' /C calc'!A0"
    with seeded_engine.begin() as conn:
        conn.execute(sa.text("UPDATE result SET locator = :loc WHERE source_id = 'nv_blog_nemo_h200_2023'"),
                     {"loc": formula})
    at = open_page("sources", QUERIES["sources"])
    assert not at.exception, at.exception
    rows = list(csv.DictReader(io.StringIO(downloads["perfledger-sources.csv"].decode())))
    assert rows and {r["locator"] for r in rows} == {"'" + formula}
    assert all(float(r["value"]) > 0 for r in rows)  # numbers stay numbers
