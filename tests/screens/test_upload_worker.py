"""The Runs page's upload through its worker process: a limit hit is one sentence on the page, nothing stored."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import worker
from perfledger import store
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_an_upload_past_the_time_limit_is_stopped_and_the_page_says_so(
        seeded_engine: Engine, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_INGEST_TIMEOUT_S", "1")
    monkeypatch.setattr(worker, "COMMAND", (sys.executable, "-c", "import time; time.sleep(60)"))
    before = store.counts(seeded_engine)
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((MEGATRON.name, MEGATRON.read_bytes(), "text/plain")).run()
    assert not at.exception
    said = "the upload took longer than 1 s to read and was stopped; nothing was stored"
    assert [e.value.replace("\\", "") for e in at.error] == [said]  # shown escaped
    assert not at.button and store.counts(seeded_engine) == before


def test_an_upload_is_previewed_and_stored_through_the_worker(seeded_engine: Engine,
                                                              open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((MEGATRON.name, MEGATRON.read_bytes(), "text/plain")).run()
    assert not at.exception and not at.error
    assert any("megatron" in m.value for m in at.markdown)
    at.button(key="ru_commit").click().run()
    assert not at.exception
    run_id = int(at.query_params["run"][0] if isinstance(at.query_params["run"], list) else at.query_params["run"])
    row = store.run(seeded_engine, run_id)
    assert row is not None and row.file_name == MEGATRON.name


HOSTILE = "**bold** :red[red] $x^2$ [a site](https://evil.example)"


@pytest.mark.parametrize(("name", "raw"), [
    (f"{HOSTILE}.log", bytes(range(256)) * 16),  # the file's name, in "not a log format"
    ("claims.csv", f"metric,value,unit,model,accelerator,source_id\ntokens_per_s,1,tokens/s,{HOSTILE},z,w\n"
     .encode()),  # its text: a model name the catalog does not know, said in a warning (the row is kept)
], ids=["file-name", "claims-text"])
def test_a_refused_uploads_name_and_text_are_shown_as_typed_never_as_markdown(
        seeded_engine: Engine, open_page: Callable[..., AppTest], name: str, raw: bytes) -> None:
    at = open_page("runs")
    at.file_uploader(key="ru_file").set_value((name, raw, "text/plain")).run()
    assert not at.exception
    (said,) = [m for m in (e.value for e in (*at.error, *at.warning)) if "bold" in m]
    assert HOSTILE in said.replace("\\", "").replace("\u2060", "")  # every character as typed...
    for markdown in ("**bold**", ":red[", "$x^2$", "[a site](https://"):  # ...and none of it read as Markdown
        assert markdown not in said
