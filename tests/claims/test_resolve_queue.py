"""The resolve queue: a cell the vocabulary cannot read is kept as printed and listed once with every row printing
it; one answer (`python -m perfledger resolve set`) re-reads them all, is saved in data/resolutions.csv and read by
the next import; a name is linked for every source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.cli import main
from perfledger.errors import DataFileError
from perfledger.resolutions import read_resolutions

DATA = Path(__file__).parents[2] / "data"
HEADER = "source_id,locator,metric,value,unit,model,accelerator,precision,source_kind\n"


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder of its own (the bundled CSVs), where answers are saved."""
    folder = tmp_path / "data"
    folder.mkdir()
    for path in DATA.glob("*.csv"):
        shutil.copy(path, folder / path.name)
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(folder))
    return folder


def _mine(engine: store.Engine, source: str) -> pl.DataFrame:
    return store.results(engine).filter(pl.col("source_id") == source).sort("id")


def test_an_unread_unit_is_queued_once_and_one_answer_reads_every_row_and_the_next_import(
        seeded: store.Engine, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = HEADER + "wafer_a,p. 1,TFLOPS,300,TFLOPs per wafer,llama2-7b,cs-2,bf16,\n"
    second = HEADER + "wafer_b,p. 2,TFLOPS,310,tflops PER  wafer,llama2-7b,cs-2,bf16,\n"
    outcome = ingest_bytes(seeded, first.encode(), "a.csv")
    ingest_bytes(seeded, second.encode(), "b.csv")
    assert outcome.unread == {"unit not read": 1} and not outcome.rows_refused
    assert outcome.as_json()["to_resolve"] == "python -m perfledger resolve list"
    stored = _mine(seeded, "wafer_a")
    assert (stored["metric"][0], stored["value"][0], stored["unit"][0]) == ("printed", 300.0, "TFLOPs per wafer")
    queue = store.to_resolve(seeded).filter(pl.col("field") == "unit")
    assert queue.select("printed", "rows", "sources").row(0) == ("TFLOPs per wafer", 2, "wafer_a, wafer_b")
    url = str(seeded.url)
    assert main(["resolve", "set", "unit", "tflops per wafer", "TFLOP/s/device", "--db", url]) == 0
    assert "2 stored rows read again" in capsys.readouterr().out
    both = pl.concat([_mine(seeded, "wafer_a"), _mine(seeded, "wafer_b")])
    assert both["metric"].to_list() == ["model_tflops_per_device"] * 2 and both["unread"].is_null().all()
    assert both["value"].to_list() == [300.0, 310.0]
    assert store.to_resolve(seeded).filter(pl.col("field") == "unit").height == 0
    answers = read_resolutions(data_dir / "resolutions.csv")
    assert answers.get("unit", "TFLOPs  per Wafer") == "TFLOP/s/device"
    third = ingest_bytes(seeded, (HEADER + "wafer_c,p. 3,TFLOPS,320,TFLOPs per wafer,llama2-7b,cs-2,bf16,\n").encode(),
                         "c.csv")
    assert third.unread == {} and _mine(seeded, "wafer_c")["metric"].to_list() == ["model_tflops_per_device"]


def test_reimporting_a_file_after_its_cells_were_answered_changes_nothing(seeded: store.Engine,
                                                                         data_dir: Path) -> None:
    text = HEADER + "wafer_a,p. 1,TFLOPS,300,TFLOPs per wafer,llama2-7b,cs-2,bf16,\n"
    ingest_bytes(seeded, text.encode(), "a.csv")
    assert main(["resolve", "set", "unit", "TFLOPs per wafer", "TFLOP/s/device", "--db", str(seeded.url)]) == 0
    grown = text + "wafer_a,p. 9,MFU,41,%,llama2-7b,cs-2,bf16,\n"  # the file again, one row more
    again = ingest_bytes(seeded, grown.encode(), "a2.csv")
    assert again.imported == "1 added, 0 updated, 1 unchanged"
    assert _mine(seeded, "wafer_a")["metric"].to_list() == ["model_tflops_per_device", "mfu"]


def test_a_source_kind_in_the_publishers_words_is_read_or_queued_and_answered(seeded: store.Engine,
                                                                            data_dir: Path) -> None:
    text = HEADER + ("docs_page,l1,MFU,41,%,llama2-7b,h100-sxm,bf16,documentation\n"
                     "press_page,l2,MFU,42,%,llama2-7b,h100-sxm,bf16,trade magazine\n")
    outcome = ingest_bytes(seeded, text.encode(), "k.csv")
    kinds = dict(store.sources(seeded).select("id", "kind").iter_rows())
    assert kinds["docs_page"] == "docs" and outcome.unread == {"source kind not read": 1}
    assert main(["resolve", "set", "source_kind", "Trade Magazine", "press", "--db", str(seeded.url)]) == 0
    assert dict(store.sources(seeded).select("id", "kind").iter_rows())["press_page"] == "press"
    assert _mine(seeded, "press_page")["unread"].is_null().all()


def test_a_name_is_answered_with_a_catalog_id_for_every_source(seeded: store.Engine, data_dir: Path) -> None:
    for source in ("tpu_a", "tpu_b"):
        ingest_bytes(seeded, (HEADER + f"{source},l1,MFU,41,%,llama3-70b,Ironwood TPU,bf16,\n").encode(), f"{source}.csv")
    entry = store.to_resolve(seeded).filter(pl.col("printed") == "Ironwood TPU").row(0, named=True)
    assert (entry["field"], entry["rows"], entry["suggestion"]) == ("accelerator", 2, "tpu-v7")
    assert main(["resolve", "set", "accelerator", "Ironwood TPU", "tpu-v7", "--db", str(seeded.url)]) == 0
    linked = store.results(seeded).filter(pl.col("accelerator_as_printed") == "Ironwood TPU")
    assert linked["accelerator_id"].to_list() == ["tpu-v7", "tpu-v7"]
    assert main(["resolve", "set", "accelerator", "Ironwood TPU", "no-such-chip", "--db", str(seeded.url)]) == 2


def test_an_answer_that_cannot_stand_is_refused_and_nothing_is_saved(seeded: store.Engine, data_dir: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    before = (data_dir / "resolutions.csv").read_text()
    assert main(["resolve", "set", "unit", "furlongs", "furlongs per fortnight", "--db", str(seeded.url)]) == 2
    assert main(["resolve", "set", "precision", "fp6", "fp6", "--db", str(seeded.url)]) == 2
    assert "precision 'fp6' is not one of" in capsys.readouterr().err
    assert (data_dir / "resolutions.csv").read_text() == before


def test_a_bad_row_of_the_resolutions_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "resolutions.csv"
    path.write_text("field,printed,means,note\nunit,TFLOPs per wafer,TFLOP/s/device,\nworkload,GRPO-ish,rl,\n")
    with pytest.raises(DataFileError, match=r"resolutions.csv:3: workload 'rl' is not one of"):
        read_resolutions(path)


def test_the_queue_lists_a_value_that_is_not_a_number_as_kept_with_nothing_to_answer(seeded: store.Engine,
                                                                                     data_dir: Path) -> None:
    ingest_bytes(seeded, (HEADER + "na_src,l1,Tokens/sec/chip,N/A,,llama3-70b,tpu-v7,bf16,\n").encode(), "n.csv")
    entry = store.to_resolve(seeded).filter(pl.col("field") == "value").row(0, named=True)
    assert (entry["printed"], entry["command"]) == ("N/A", None)
    row = _mine(seeded, "na_src").row(0, named=True)
    assert row["value"] is None and json.loads(row["printed"])["value"] == "N/A"
