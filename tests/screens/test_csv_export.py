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
    "runs": "", "history": "y=step_time_s&sort=date", "campaigns": "", "audit": "v=inconsistent&sort=rel_diff&desc=1", "sources": "src=nv_blog_nemo_h200_2023&sort=value",
    "mlperf": "d=closed&sort=time to train (min)&desc=1",
}
MLPERF_RESULTS = ("nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt", "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt",
                  "google_tpu_v5p_1024_maxtext_gpt3_v4.0_result_0.txt")
CAMPAIGN = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns" / "bigscience_gpt2_meg_base_sweep"


def file_name(slug: str, query: str) -> str:
    """The name the page's Download CSV gives its file: the page and the view as the URL writes it."""
    from urllib.parse import parse_qsl

    from perfledger import urlstate

    state = views.state_from_query(slug, parse_qsl(query))
    return views.table_file_name(slug, urlstate.query_string(state))


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
    if slug == "mlperf":
        for name in MLPERF_RESULTS:
            pipeline.ingest_path(seeded_engine, LOGS / name)
    at = open_page(slug, query)
    assert not at.exception, at.exception
    expected = views.export(slug, query, seeded_engine, "csv")
    assert downloads[file_name(slug, query)] == expected
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
    rows = list(csv.DictReader(io.StringIO(downloads[file_name("sources", QUERIES["sources"])].decode())))
    assert rows and {r["locator"] for r in rows} == {"'" + formula}
    assert all(float(r["value"]) > 0 for r in rows)  # numbers stay numbers


def test_two_views_of_a_page_download_under_two_names(seeded_url: str, downloads: dict[str, bytes],
                                                      open_page: Callable[..., AppTest]) -> None:
    for query in ("", "p=fsdp", "p=fsdp&sort=speedup (x)&desc=1"):
        assert not open_page("speedups", query).exception
    names = sorted(n for n in downloads if n.startswith("perfledger-speedups") and n.endswith(".csv"))
    assert names == sorted({file_name("speedups", q) for q in ("", "p=fsdp", "p=fsdp&sort=speedup (x)&desc=1")})
    assert len(names) == 3 and "perfledger-speedups.csv" in names


def test_a_sort_in_the_url_sorts_the_page_table_and_its_csv_alike(seeded_engine: Engine, downloads: dict[str, bytes],
                                                                   open_page: Callable[..., AppTest]) -> None:
    import csv
    import io

    query = "p=fsdp&sort=speedup (x)&desc=1"
    at = open_page("speedups", query)
    shown = at.dataframe[0].value["speedup (x)"].tolist()
    assert shown == sorted(shown, reverse=True) and len(shown) >= 5
    rows = list(csv.DictReader(io.StringIO(downloads[file_name("speedups", query)].decode())))
    assert [float(r["speedup (x)"]) for r in rows] == shown
    assert downloads[file_name("speedups", query)] == views.export("speedups", query, seeded_engine)
