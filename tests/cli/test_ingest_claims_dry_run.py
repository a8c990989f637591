"""python -m ingest FILE --dry-run on a claims table: what it would add, update, refuse and leave unlinked; nothing
stored. And a claims import speaks of claims: its stated source kind kept, no training-log warnings."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import Engine

from ingest.__main__ import main
from perfledger import store

TABLE = Path(__file__).resolve().parents[1] / "fixtures" / "claims" / "maxtext_v5p.csv"


def _counts(engine: Engine) -> tuple[int, int, int]:
    return store.results(engine).height, store.runs(engine).height, store.sources(engine).height


def test_a_dry_run_says_what_it_would_add_and_leave_unlinked_and_stores_nothing(
        writable_engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    before = _counts(writable_engine)
    assert main([str(TABLE), "--dry-run", "--db", str(writable_engine.url)]) == 0
    out = capsys.readouterr().out
    assert "dry run, nothing stored" in out and "claims: would be 32 added, 0 updated, 0 unchanged" in out
    assert "warning: model '1024B model' (8 rows) is not in the catalog" in out
    assert _counts(writable_engine) == before


def test_a_dry_run_of_a_stored_table_finds_every_row_unchanged_and_counts_unread_cells(
        writable_engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = str(writable_engine.url)
    assert main([str(TABLE), "--db", url]) == 0
    capsys.readouterr()
    assert main([str(TABLE), "--dry-run", "--json", "--db", url]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["dry_run"] is True and shown["imported"] == "would be 0 added, 0 updated, 32 unchanged"
    bad = tmp_path / "bad.csv"
    bad.write_text("source_id,metric,value,unit,model,accelerator\nmine,mfu,41,furlongs,llama2-7b,h100-sxm\n"
                   "mine,mfu,41,%,llama2-7b,h100-sxm\n", encoding="utf-8")
    before = _counts(writable_engine)
    assert main([str(bad), "--dry-run", "--db", url]) == 0  # every row would be stored, the unread one as printed
    captured = capsys.readouterr()
    assert "would be 2 added" in captured.out
    assert "kept as printed, unread yet: 1 unit not read; answer them with python -m perfledger resolve list" \
        in captured.out
    assert _counts(writable_engine) == before


def test_a_claims_import_keeps_the_stated_source_kind_and_prints_no_training_log_warnings(
        writable_engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(TABLE), "--db", str(writable_engine.url)]) == 0
    out = capsys.readouterr().out
    assert "not computed" not in out and "pass --model" not in out and "claims: 32 added" in out
    source = store.sources(writable_engine).filter(pl.col("id") == "maxtext_v5p_configs").row(0, named=True)
    assert source["kind"] == "docs" and source["evidence"].startswith("imported via cli")


def test_a_docs_source_stays_open_to_its_own_next_import_and_can_be_deleted(
        writable_engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from perfledger.store.claims import delete_source

    url = str(writable_engine.url)
    assert main([str(TABLE), "--db", url]) == 0
    corrected = tmp_path / "corrected.csv"
    corrected.write_text(TABLE.read_text(encoding="utf-8").replace(",328,TFLOP/sec/chip", ",329,TFLOP/sec/chip"),
                         encoding="utf-8")
    capsys.readouterr()
    assert main([str(corrected), "--db", url]) == 0
    assert "claims: 0 added, 1 updated, 31 unchanged" in capsys.readouterr().out
    assert delete_source(writable_engine, "maxtext_v5p_configs") == 32
