"""The Sources page lists claim imports as imports (file, rows, when) and the unlinked names with the command
that links them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import schema, store
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


def _evidence_shown(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption).replace("\\", "")


@pytest.mark.parametrize(("name", "credited"), [("team-a", "imported via upload with token team-a"),
                                                (None, "imported via upload with the upload token")])
def test_a_claims_upload_is_credited_to_the_tokens_name_never_to_a_hash_of_it(
        seeded_engine: Engine, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch,
        name: str | None, credited: str) -> None:
    """An unsalted hash of the token on the Sources page gave a weak token away to a dictionary at once."""
    token = "s3cret-token"
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", token)
    if name:
        monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN_NAME", name)
    at = open_page("runs")
    at.text_input(key="ru_tok").input(token).run()
    raw = CLAIMS.read_bytes().replace(b"nv_blog_nemo_h200_2023", b"team_notes")
    at.file_uploader(key="ru_file").set_value(("team.csv", raw, "text/csv")).run()
    at.button(key="ru_commit").click().run()  # "Store these claims"
    assert not at.exception and not at.error
    at = open_page("sources", "src=team_notes")
    shown = _evidence_shown(at)
    assert f"Evidence: {credited} ·" in shown
    assert hashlib.sha256(token.encode()).hexdigest()[:12] not in shown + str(store.sources(seeded_engine).to_dicts())


def test_a_token_hash_stored_by_an_earlier_release_is_never_shown(seeded_engine: Engine,
                                                                  open_page: Callable[..., AppTest]) -> None:
    _import_with_an_unknown_chip(seeded_engine)
    with seeded_engine.begin() as conn:
        conn.execute(sa.update(schema.source).where(schema.source.c.id == "my_import")
                     .values(evidence="imported via upload with token sha256:f52fbd32b2b3"))
    at = open_page("sources", "src=my_import")
    assert "imported via upload with the upload token (its hash hidden)" in _evidence_shown(at)
    listed = sources.table(sources.SourcesView(), seeded_engine)
    assert "f52fbd32b2b3" not in _evidence_shown(at) + str(listed["evidence"].to_list())
