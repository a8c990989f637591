"""The Sources page lists claim imports as imports (file, rows, when) and the unlinked names with the command
that links them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger.records import RunConfig
from perfledger.views import sources

CLAIMS = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "claims_example.csv"


def _import_with_an_unknown_chip(engine: Engine) -> None:
    raw = CLAIMS.read_text().replace("nv_blog_nemo_h200_2023", "my_import")
    raw = raw.replace("NVIDIA H200 SXM 141GB", 'Mystery "Chip" 9000')
    pipeline.commit(engine, raw.encode(), "mine.csv", RunConfig())


def test_imports_list_file_rows_and_time(seeded_engine: Engine) -> None:
    assert sources.imports(seeded_engine).height == 0
    _import_with_an_unknown_chip(seeded_engine)
    row = sources.imports(seeded_engine).row(0, named=True)
    assert (row["source"], row["file"], row["rows"]) == ("my_import", "mine.csv", 4)
    assert row["imported (UTC)"] is not None


def test_unlinked_names_come_with_a_link_command(seeded_engine: Engine) -> None:
    _import_with_an_unknown_chip(seeded_engine)
    row = sources.unlinked(seeded_engine).row(0, named=True)
    assert (row["kind"], row["printed_name"], row["rows"]) == ("accelerator", 'Mystery "Chip" 9000', 2)
    nearest = row["nearest"].split(", ")[0]
    assert row["link with"] == f"python -m perfledger catalog link 'Mystery \"Chip\" 9000' {nearest}"
    assert sources.link_command("MPT-7B", "mpt-7b") == 'python -m perfledger catalog link "MPT-7B" mpt-7b'


def test_sources_page_shows_imports_and_unlinked_names(seeded_engine: Engine,
                                                       open_page: Callable[..., AppTest]) -> None:
    _import_with_an_unknown_chip(seeded_engine)
    at = open_page("sources")
    assert not at.exception, at.exception
    assert [h.value for h in at.subheader][-2:] == ["Claim imports", "Unlinked names"]
    frames = [df.value for df in at.dataframe]
    assert any("mine.csv" in f.get("file", []).tolist() for f in frames if "file" in f.columns)
    assert any("link with" in f.columns for f in frames)
