"""Tables that read right on a 1440px screen: an empty cell reads "—" on every table a page draws, and the figures
that matter sit leftmost (Speedups: the pair, its ratio and caveats; Runs: the run and its throughput and MFU)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger.views.registry import PAGES

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TABLE_WIDTH_PX = 980  # the table's width beside the sidebar in a 1440px window (wide layout)


def _columns(table: Any) -> dict[str, Any]:
    return dict(json.loads(table.proto.columns or "{}"))


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_every_table_shows_an_empty_cell_as_a_dash(
        slug: str, seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    query = ""
    if slug == "runs":  # the run list and a run's own tables
        run = pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out").run_id
        assert [t.proto.placeholder for t in open_page(slug).dataframe] == ["—"]
        query = f"run={run}"
    at = open_page(slug, query)
    assert not at.exception, at.exception
    assert at.dataframe, f"{slug} draws no table"
    assert [t.proto.placeholder for t in at.dataframe] == ["—"] * len(at.dataframe)


def test_speedups_keep_the_pair_its_ratio_and_its_caveats_on_a_1440px_screen(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    for query in ("", "p=fsdp"):
        table = open_page("speedups", query).dataframe[0]
        shown = table.value.columns.tolist()
        assert shown[:5] == ["model", "baseline", "candidate", "speedup (x)", "caveats"], shown
        config = _columns(table)
        fixed = sum(int(config[c]["width"]) for c in ("baseline", "candidate", "caveats"))
        assert fixed + 70 + 90 <= TABLE_WIDTH_PX  # the model and speedup columns as drawn: 70 and 83 px


def test_runs_list_shows_throughput_and_mfu_next_to_the_run_name(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    table = open_page("runs").dataframe[0]
    assert list(table.proto.column_order)[:4] == ["id", "file_name", "tokens_per_s_per_device", "mfu"]


def _long_table() -> None:
    import polars as pl

    from screens import _ui

    _ui.show_table(pl.DataFrame({"claim": range(_ui.MAX_SHOWN_ROWS + 500)}), key="long")


def test_a_long_table_sends_its_first_rows_and_says_the_csv_holds_every_row() -> None:
    from screens import _ui

    at = AppTest.from_function(_long_table).run(timeout=60)
    assert not at.exception, at.exception
    assert at.dataframe[0].value.shape[0] == _ui.MAX_SHOWN_ROWS
    assert f"The first {_ui.MAX_SHOWN_ROWS:,} of {_ui.MAX_SHOWN_ROWS + 500:,} rows" in at.caption[0].value


def _repeated_text_table() -> None:
    import polars as pl

    from screens import _ui

    _ui.show_table(pl.DataFrame({"series": ["llama2-70b · h100-sxm · pretrain · bf16 · 3D"] * 1_500 + [None],
                                 "source": ["nv_blog_nemo_h200_2023"] * 1_501, "devices": range(1_501)}), key="repeated")


def test_repeated_text_travels_once_and_reads_the_same() -> None:
    import io

    import pyarrow as pa

    at = AppTest.from_function(_repeated_text_table).run(timeout=60)
    assert not at.exception, at.exception
    sent = pa.ipc.open_stream(io.BytesIO(at.dataframe[0].proto.arrow_data.data)).read_all()
    assert pa.types.is_dictionary(sent.schema.field("series").type)
    assert not pa.types.is_dictionary(sent.schema.field("source").type)  # a link column stays text
    assert sent.column("series").nbytes < 3_000  # as text, its 1,500 copies are 66,000 bytes
    shown = at.dataframe[0].value
    assert shown["series"].iloc[0] == "llama2-70b · h100-sxm · pretrain · bf16 · 3D" and shown["series"].isna().iloc[-1]
