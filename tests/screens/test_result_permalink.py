"""Every result has a permalink, /sources?result=ID: every stored field, the note, locator, source link, the audit's
verdict and the views whose tables show it; the pages' tables link each result row to it."""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import names, store, views

SOURCE = "nv_blog_nemo_h200_2023"


def _result_id(engine: Engine, metric: str, model: str | None = None, accelerator: str | None = None) -> int:
    rows = store.results(engine, source_ids=[SOURCE], metric=metric)
    if model:
        rows = rows.filter(rows["model_id"] == model)
    if accelerator:
        rows = rows.filter(rows["accelerator_id"] == accelerator)
    return int(rows["id"][0])


def _fields(at: AppTest) -> dict[str, list[str]]:
    table = at.dataframe[0].value
    out: dict[str, list[str]] = {}
    for field, value in zip(table["field"], table["value"], strict=True):
        out.setdefault(field, []).append(value)
    return out


def test_a_results_permalink_shows_every_field_its_source_verdict_and_the_views_using_it(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    rid = _result_id(seeded_engine, "tokens_per_s_per_device", "llama2-7b", "h200")
    at = open_page("sources", f"result={rid}")
    assert not at.exception and not at.error, (at.exception, at.error)
    fields = _fields(at)
    stored = store.results(seeded_engine, ids=[rid]).row(0, named=True)
    assert {names.column_label(c) for c in stored} <= set(fields)  # every stored column, by its display name
    assert fields["value"] == ["16,913"] and fields["note"] == [stored["note"]] and fields["locator"] == [stored["locator"]]
    assert fields["source URL"] == [stored["source_url"]]
    assert any(v.endswith(": consistent") for v in fields["audit input of"])  # the H200 7B TFLOPS claim it backs
    assert {f"/sources?src={SOURCE}", "/speedups", "/accelerators?m=llama2-7b"} <= set(fields["shown in"])
    said = " ".join(m.value for m in at.markdown)
    assert "(/speedups)" in said and "Shown in" in said


def test_a_checked_claims_permalink_carries_the_audits_verdict(seeded_engine: Engine,
                                                              open_page: Callable[..., AppTest]) -> None:
    claim = views.table("audit", views.AuditView(sources=(SOURCE,)), seeded_engine).row(0, named=True)
    fields = _fields(open_page("sources", f"result={claim['claim_id']}"))
    assert fields["audit verdict"] == [claim["verdict"]]
    assert fields["audit inputs"] == [claim["inputs"]]
    assert f"/audit?src={SOURCE}" in fields["shown in"]


def test_an_unknown_result_id_is_said_in_one_sentence(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("sources", "result=999999")
    assert not at.exception
    assert "there is no result 999999" in at.error[0].value.replace("\\", "")


def test_result_rows_link_to_their_permalink(seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    rows = open_page("sources", f"src={SOURCE}").dataframe[0]
    assert json.loads(rows.proto.columns)["id"]["type_config"]["type"] == "link"
    assert rows.value["id"].iloc[0] == views.links.result(int(rows.value["id"].iloc[0].rsplit("=", 1)[1])).href
    speedups = open_page("speedups").dataframe[0]
    ids = speedups.value["candidate result id"].dropna().tolist()
    assert ids and all(i.startswith("/sources?result=") for i in ids)
    assert json.loads(speedups.proto.columns)["candidate result id"]["type_config"]["type"] == "link"


def test_the_permalink_csv_is_its_export(seeded_engine: Engine) -> None:
    rid = _result_id(seeded_engine, "n_devices_largest_submission")
    csv = views.export("sources", f"result={rid}", seeded_engine).decode()
    assert csv.startswith("field,value\n") and '\nvalue,"10,752"\n' in csv


def test_a_results_note_and_audit_explanation_are_printed_whole_not_cut_at_the_tables_edge(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    rid = _result_id(seeded_engine, "model_tflops_per_device", "gpt3-175b")
    at = open_page("sources", f"result={rid}")
    assert not at.exception, at.exception
    note = store.results(seeded_engine, ids=[rid])["note"][0]
    explanation = _fields(at)["audit explanation"][0]
    assert len(note) > 120 and len(explanation) > 120  # longer than the table's cell shows on a 1440px screen
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert f"Note: {names.in_words(note)}" in captions and f"Audit explanation: {explanation}" in captions
