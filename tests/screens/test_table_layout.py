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
    if slug == "mlperf":
        pipeline.ingest_path(seeded_engine, LOGS / "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt")
    at = open_page(slug, query)
    assert not at.exception, at.exception
    assert at.dataframe, f"{slug} draws no table"
    assert [t.proto.placeholder for t in at.dataframe] == ["—"] * len(at.dataframe)


def test_speedups_keep_the_pair_its_ratio_caveats_and_source_on_a_1440px_screen_then_the_published_tflops(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    first = ["model", "baseline", "candidate", "speedup (x)", "caveats", "source", "baseline TFLOPS/device published",
             "candidate TFLOPS/device published"]
    table = open_page("speedups").dataframe[0]
    assert table.value.columns.tolist()[:8] == first
    config = _columns(table)
    assert sum(int(config[c]["width"]) for c in first[:5]) + 110 <= TABLE_WIDTH_PX  # the source id: about 110 px
    shown = table.value.dropna(subset=["candidate TFLOPS/device published"])
    assert shown["candidate TFLOPS/device published"].tolist() == [779, 822, 836]
    assert shown["baseline TFLOPS/device published"].tolist() == [211, 206, 201]
    fsdp = open_page("speedups", "p=fsdp").dataframe[0].value.columns.tolist()
    assert "baseline TFLOPS/device published" not in fsdp  # empty in every row: left off the screen, kept in the CSV
    assert fsdp[:6] == ["model", "baseline", "candidate", "speedup (x)", "caveats", "source"]


def test_runs_list_shows_model_accelerator_devices_and_throughput_next_to_the_run_name(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    pipeline.ingest_path(seeded_engine, LOGS / "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt")
    table = open_page("runs").dataframe[0]
    assert table.value.columns.tolist()[:6] == ["id", "file_name", "model", "accelerator", "n_devices",
                                                "tokens_per_s_per_device"]


def test_scaling_sensitivity_starts_with_what_scaled_not_with_empty_columns(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    shown = open_page("scaling", "s=sensitivity").dataframe[0].value
    assert shown.columns.tolist()[:4] == ["model", "accelerator", "devices", "value"]
    assert all(shown[c].notna().any() for c in shown.columns)  # no column empty in every row


def test_catalog_shows_peaks_and_memory_beside_the_accelerator(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    shown = open_page("accelerators", "s=catalog").dataframe[0].value.columns.tolist()
    assert shown[:8] == ["accelerator", "name", "bf16 TFLOPS", "fp16 TFLOPS", "fp8 TFLOPS", "memory (GB)",
                         "bandwidth (TB/s)", "TDP (W)"]


def test_audit_shows_the_metric_verdict_and_explanation_first(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    table = open_page("audit").dataframe[0]
    assert list(table.proto.column_order)[:8] == ["claim_id", "metric", "reported", "recomputed", "rel_diff", "verdict",
                                                  "explanation", "source_id"]


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


def test_history_shows_the_figure_and_its_verdict_beside_the_configuration(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    for name in ("msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log",
                 "msft_megatron_ds_gpt3_125m_random_ltd_baseline_8gpu_ansi.log"):
        pipeline.ingest_path(seeded_engine, LOGS / name)
    table = open_page("history").dataframe[0]
    assert list(table.proto.column_order)[:6] == ["configuration", "date", "value", "unit", "worse than before",
                                                  "regression"]
    assert int(_columns(table)["configuration"]["width"]) <= 300


def test_a_relabelled_column_keeps_its_number_format(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("audit")
    config = _columns(at.dataframe[0])  # rel_diff reads "difference (%)", in % at the reading rule
    assert config["rel_diff"]["label"] == "difference (%)"
    assert config["rel_diff"]["type_config"]["format"] == "%,g"
    assert at.dataframe[0].value["rel_diff"].abs().max() > 1  # 100 x the fraction


@pytest.mark.parametrize(("slug", "query"), [("speedups", ""), ("accelerators", "s=head"), ("audit", ""),
                                             ("history", ""), ("scaling", "")])
def test_no_column_is_narrower_than_its_name(slug: str, query: str, seeded_url: str,
                                             open_page: Callable[..., AppTest]) -> None:
    """Speedups' "baseline TFLO", Head to head's "ratio (second" were names cut at a fixed 80-90 px: a width is at
    least the name's (the grid's 14 px header font: about 7.2 px a character, and the sort arrow)."""
    for table in open_page(slug, query).dataframe:
        for column, config in _columns(table).items():
            if isinstance(config.get("width"), int):
                assert config["width"] >= 7.2 * len(config.get("label") or column) + 20, (slug, column, config)


def test_scaling_groups_device_counts_by_thousands_as_its_axis_does(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    table = open_page("scaling").dataframe[0]
    assert 1024 in table.value["devices"].tolist()  # shown "1,024", not "1024" beside an axis reading 1,024
    assert _columns(table)["devices"]["type_config"]["format"] == "%,d"


def test_head_to_head_shows_both_values_beside_their_ratio(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    table = open_page("accelerators", "s=head").dataframe[0]
    first = ["pair", "model", "metric", "ratio (second / first)", "first value", "second value"]
    assert table.value.columns.tolist()[:6] == first  # the second value was the eighth column, off a 1440px screen
    config = _columns(table)
    assert sum(int(config[c]["width"]) for c in first if "width" in config.get(c, {})) <= TABLE_WIDTH_PX


def test_overview_shows_each_groups_name_whole_beside_narrow_counts(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    table = open_page("overview").dataframe[0]
    config = _columns(table)
    name, *counts = table.value.columns.tolist()
    assert int(config[name]["width"]) >= 200  # "measured from 19 ingested runs" at about 6 px a character
    assert all(config[c]["width"] == "small" for c in counts)


def test_time_to_train_groups_device_counts_by_thousands_as_its_axis_does(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    table = open_page("time-to-train").dataframe[0]
    assert 1024 in table.value["devices"].tolist()
    assert _columns(table)["devices"]["type_config"]["format"] == "%,d"
