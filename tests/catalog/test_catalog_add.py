"""Catalog rows offered by `catalog add`: checked row by row, stored only when none is refused, linked at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from perfledger import catalog, charts, store
from perfledger.catalog.validate import read_catalog_file, shape_params
from perfledger.chart_colours import FALLBACK_COLOUR
from perfledger.errors import InvalidInput, UnknownId
from perfledger.records import ResultRecord

INHOUSE_7B = ("inhouse-7b,inhouse,InHouse-7B,6.7e9,32,4096,32,32,16384,50432,gelu,2048,true,InHouse-7B | ourteam/inhouse-7b,"
          "MosaicML model card")
MODEL_HEADER = "id,family,name,params,layers,hidden,heads,kv_heads,ffn_hidden,vocab,ffn_kind,seq_len,tied_embeddings,"\
               "aliases,note"


def _file(tmp_path: Path, *lines: str, name: str = "rows.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _check(engine: Engine, path: Path) -> store.CatalogWrite | None:
    checked = read_catalog_file(path, store.catalog_record(engine), frozenset(store.sources(engine)["id"]))
    if checked.refused:
        return None
    return store.save_catalog_rows(engine, checked.kind, [v.row for v in checked.accepted if v.row])


def test_a_new_model_row_is_added_and_resolves_by_its_aliases(writable_engine: Engine, tmp_path: Path) -> None:
    done = _check(writable_engine, _file(tmp_path, MODEL_HEADER, INHOUSE_7B))
    assert done is not None and (done.added, done.updated) == (1, 0)
    known = store.catalog_record(writable_engine)
    assert catalog.resolve_model("ourteam/inhouse-7b", known) == "inhouse-7b"
    assert known.models["inhouse-7b"]["layers"] == 32


def test_a_row_with_a_stored_id_updates_it_and_keeps_its_aliases(writable_engine: Engine, tmp_path: Path) -> None:
    path = _file(tmp_path, "id,vendor,bf16_tflops,aliases", "h100-sxm,NVIDIA,989.4,H100 SXM5 (our cluster)")
    done = _check(writable_engine, path)
    assert done is not None and (done.added, done.updated) == (0, 1)
    known = store.catalog_record(writable_engine)
    assert known.accelerators["h100-sxm"]["bf16_tflops"] == 989.4
    assert catalog.resolve_accelerator("H100 SXM5 (our cluster)", known) == "h100-sxm"
    assert catalog.resolve_accelerator("NVIDIA H100 80GB HBM3", known) == "h100-sxm"
    assert known.accelerators["h100-sxm"]["fp8_tflops"] == 1979  # a column the file leaves out is kept


def test_a_new_accelerator_row_is_added_with_its_peaks(writable_engine: Engine, tmp_path: Path) -> None:
    store.add_results(writable_engine, [ResultRecord(metric="tokens_per_s_per_device", value=10.0,
                                                     unit="tokens/s/device", model_id="llama2-7b",
                                                     accelerator_as_printed="NVIDIA GeForce RTX 5070 Ti")])
    path = _file(tmp_path, "id,vendor,name,unit_basis,fp32_tflops,bf16_tflops,fp8_tflops,aliases",
                 "rtx-5070-ti,NVIDIA,GeForce RTX 5070 Ti,GPU,44,176,352,NVIDIA GeForce RTX 5070 Ti")
    done = _check(writable_engine, path)
    assert done is not None and done.added == 1
    assert done.relinked == 1  # the stored row that printed this name links at once
    assert "NVIDIA GeForce RTX 5070 Ti" not in store.unlinked_names(writable_engine)["printed_name"]


def test_every_bad_row_is_refused_with_its_line_and_reason(seeded_engine: Engine, tmp_path: Path) -> None:
    path = _file(tmp_path, MODEL_HEADER, INHOUSE_7B,
                 "InHouse-30B,inhouse,InHouse-30B,30e9,48,7168,64,64,28672,50432,gelu,8192,true,,",
                 "inhouse-30b,inhouse,InHouse-30B,40e9,48,7168,64,64,28672,50432,gelu,8192,true,,",
                 "inhouse-1b,inhouse,InHouse-1B,1.3e9,24,2048,16,16,8192,50368,gelu,2048,true,Llama 2 7B,",
                 "inhouse-3b,inhouse,InHouse-3B,many,24,2048,16,16,8192,50368,gelu,2048,true,,",
                 "inhouse-7b,inhouse,InHouse-7B again,6.7e9,32,4096,32,32,16384,50432,gelu,2048,true,,",
                 "inhouse-9b,inhouse,InHouse-9B,9e9,32,4096,32,5,16384,50432,gelu,2048,true,,",
                 "newmodel,,,,,,,,,,,,,,")
    checked = read_catalog_file(path, store.catalog_record(seeded_engine),
                                frozenset(store.sources(seeded_engine)["id"]))
    assert checked.kind == "model"
    assert [v.line for v in checked.accepted] == [2]
    reasons = {v.line: v.reason or "" for v in checked.refused}
    assert "lowercase slug" in reasons[3]
    assert "differ by -25" in reasons[4] and "note" in reasons[4]
    assert "already names llama2-7b" in reasons[5]
    assert "params" in reasons[6] and "not a valid number" in reasons[6]
    assert "already given on line 2" in reasons[7]
    assert "does not divide heads" in reasons[8]
    assert "family" in reasons[9]


def test_a_params_difference_the_note_explains_is_kept_with_a_remark(seeded_engine: Engine, tmp_path: Path) -> None:
    path = _file(tmp_path, MODEL_HEADER, "inhouse-30b,inhouse,InHouse-30B,40e9,48,7168,64,64,28672,50432,gelu,8192,true,,"
                 "nominal size as published; the shape gives 30B")
    checked = read_catalog_file(path, store.catalog_record(seeded_engine), frozenset())
    (verdict,) = checked.verdicts
    assert verdict.action == "add" and "differ by -25" in verdict.remarks[0]


def test_a_wider_precision_with_a_higher_peak_is_refused(seeded_engine: Engine, tmp_path: Path) -> None:
    path = _file(tmp_path, "id,vendor,name,unit_basis,bf16_tflops,fp8_tflops",
                 "x1,Acme,X1,GPU,1979,989", "x2,Acme,X2,GPU,-5,")
    checked = read_catalog_file(path, store.catalog_record(seeded_engine), frozenset())
    reasons = {v.line: v.reason or "" for v in checked.refused}
    assert "bf16_tflops 1979 exceeds fp8_tflops 989" in reasons[2]
    assert "bf16_tflops must be positive" in reasons[3]


def test_a_new_accelerator_keeps_the_colour_its_row_gives_on_every_chart(writable_engine: Engine,
                                                                          tmp_path: Path) -> None:
    path = _file(tmp_path, "id,vendor,name,unit_basis,bf16_tflops,colour",
                 "x1,Acme,X1,GPU,500,#123abc", "x2,Acme,X2,GPU,600,")
    assert _check(writable_engine, path) is not None
    colours = store.accelerator_colours(writable_engine)
    assert ("x1", "#123abc") in colours and "x2" not in dict(colours)
    scale = charts.accelerator_scale(["x1", "x2", "h200"], colours).to_dict()
    assert (scale["domain"], scale["range"]) == (["h200", "x1", "x2"], [dict(colours)["h200"], "#123abc", FALLBACK_COLOUR])


def test_a_colour_that_is_not_rrggbb_is_refused_with_its_line(seeded_engine: Engine, tmp_path: Path) -> None:
    path = _file(tmp_path, "id,vendor,name,unit_basis,colour", "x1,Acme,X1,GPU,green", "x2,Acme,X2,GPU,#12345",
                 "x3,Acme,X3,GPU,#00ff7F")
    checked = read_catalog_file(path, store.catalog_record(seeded_engine), frozenset())
    reasons = {v.line: v.reason or "" for v in checked.refused}
    assert set(reasons) == {2, 3} and all("colour must be #rrggbb" in r for r in reasons.values())
    assert "'green'" in reasons[2]


@pytest.mark.parametrize("header", ["name,family", "id,aliases", "id,hue"])
def test_a_header_that_names_no_single_table_is_refused(seeded_engine: Engine, tmp_path: Path, header: str) -> None:
    with pytest.raises(InvalidInput):
        read_catalog_file(_file(tmp_path, header, "a,b"), store.catalog_record(seeded_engine), frozenset())


def test_the_bundled_models_agree_with_their_shapes_or_say_why() -> None:
    for row in catalog.bundled_catalog().models.values():
        if not row.get("params") or shape_params(row, tied=bool(row.get("tied_embeddings"))) is None:
            continue
        count = shape_params(row, tied=bool(row.get("tied_embeddings")))
        assert count is not None
        assert abs(count / row["params"] - 1) <= 0.05 or row.get("note"), row["id"]


def _unlinked_claims(engine: Engine, printed: str, n: int) -> None:
    store.add_results(engine, [ResultRecord(metric="tokens_per_s_per_device", value=1000.0 + i,
                                            unit="tokens/s/device", model_as_printed=printed,
                                            accelerator_id="h100-sxm", locator=f"row {i}") for i in range(n)])


def test_an_unknown_name_is_listed_then_linked_with_every_row(writable_engine: Engine, tmp_path: Path) -> None:
    _unlinked_claims(writable_engine, "InHouse 7B (our table)", 3)
    listed = store.unlinked_names(writable_engine).filter(kind="model", printed_name="InHouse 7B (our table)")
    assert listed["rows"].to_list() == [3] and listed["nearest"][0] == ""  # no InHouse family in the catalog yet
    assert _check(writable_engine, _file(tmp_path, MODEL_HEADER, INHOUSE_7B)) is not None
    linked = store.link_name(writable_engine, "model", "InHouse 7B (our table)", "inhouse-7b", all_sources=True)
    assert (linked.rows, linked.aliased) == (3, True)
    rows = store.results(writable_engine).filter(model_as_printed="InHouse 7B (our table)")
    assert rows["model_id"].to_list() == ["inhouse-7b"] * 3
    assert catalog.resolve_model("InHouse 7B (our table)", store.catalog_record(writable_engine)) == "inhouse-7b"


def test_an_alias_row_added_later_links_the_stored_rows(writable_engine: Engine, tmp_path: Path) -> None:
    _unlinked_claims(writable_engine, "InHouse 70B", 2)
    path = _file(tmp_path, "id,family,name,aliases", "inhouse-70b,inhouse,InHouse 70B,InHouse 70B")
    done = _check(writable_engine, path)
    assert done is not None and done.relinked == 2
    assert set(store.results(writable_engine).filter(model_as_printed="InHouse 70B")["model_id"]) == {
        "inhouse-70b"}


def test_linking_to_an_unknown_id_or_another_ids_alias_is_refused(writable_engine: Engine) -> None:
    with pytest.raises(UnknownId):
        store.link_name(writable_engine, "model", "Foo 7B", "foo-7b")
    with pytest.raises(InvalidInput):
        store.link_name(writable_engine, "model", "Llama 2 7B", "llama2-13b")


def test_a_model_row_with_a_head_dim_column_is_accepted_and_its_flops_use_it(writable_engine: Engine,
                                                                              tmp_path: Path) -> None:
    from perfledger.calc import flops as fl

    wide = _file(tmp_path, MODEL_HEADER + ",head_dim",  # MaxText-like: 8 heads x 256 = 2048 against hidden 1024
                 "wide-1b,inhouse,Wide 1B,1.1e9,16,1024,8,8,4096,32000,swiglu,2048,false,Wide 1B,our config,256")
    checked = read_catalog_file(wide, store.catalog_record(writable_engine),
                                frozenset(store.sources(writable_engine)["id"]))
    assert not checked.refused and checked.accepted[0].row is not None
    assert checked.accepted[0].row["head_dim"] == 256
    done = _check(writable_engine, wide)
    assert done is not None and done.added == 1
    row = store.catalog_record(writable_engine).models["wide-1b"]
    assert row["head_dim"] == 256 and fl.ModelShape.from_row(row).attention == 2048
    bad = _file(tmp_path, MODEL_HEADER + ",head_dim",
                "wide-2b,inhouse,Wide 2B,2e9,16,1024,8,8,4096,32000,swiglu,2048,false,Wide 2B,our config,-1", name="b.csv")
    refused = read_catalog_file(bad, store.catalog_record(writable_engine), frozenset(store.sources(writable_engine)["id"]))
    assert refused.refused and "head_dim" in refused.refused[0].reason
