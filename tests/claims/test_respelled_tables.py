"""Mutation test: a real table with its headers, units, precisions and labels respelled the way other publishers
print them stores the same figures and gets the same verdicts as the table as printed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pytest

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.headers import quantities_of
from perfledger.views.audit import AuditView, table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claims"
# Per table: headers renamed, and cells respelled in a column (column -> {as printed: as another publisher prints it}).
RESPELLED: dict[str, tuple[dict[str, str], dict[str, dict[str, str]]]] = {
    "nemo_rl_performance_v06.csv": (
        {"#-GPUs": "Number of GPUs", "G-GBS": "Generation batch size", "G-Average Seq len": "Average sequence length",
         "T-GBS": "Training GBS", "T-Max Sequence Length": "Max seq len", "On/Off policy": "Policy",
         "System": "GPU", "Training Backend": "Backend"},
        {"metric": {"Tokens / sec / GPU": "Throughput (tok/s/GPU)", "Total Step time(s)": "Step time (sec)"},
         "unit": {"": ""},
         "Precision": {"Training BF16, Generation BF16": "bf16 training; bf16 rollout",
                       "Generation FP8, Training FP8": "FP8 generation, FP8 (e4m3) training"},
         "Model": {"DeepSeek V3": "DEEPSEEK V3"}, "System": {"DGX-H100": "dgx-h100"},
         "source_kind": {"documentation": "Documentation"}}),
    "tpu_recipes_ironwood.csv": (
        {"Number of chips": "#chips", "GBS": "Global batch size", "Sequence length": "Seq len", "Model ID": "model",
         "Precision": "dtype"},
        {"metric": {"Step time (seconds)": "step time", "TFLOPs/sec/chip": "model TFLOPS",
                    "Tokens/sec/chip": "tokens per second per chip"},
         "Precision": {"bf16": "BF16", "fp8_full": "FP8 (full)"}, "Model ID": {"deepseek-v3": "DeepSeek-V3"},
         "accelerator": {"Ironwood TPU": "ironwood tpu"}}),
    "dgxc_llama31_70b.csv": (
        {"n_devices": "#GPUs", "global_batch": "GBS", "seq_len": "Sequence length", "micro_batch": "MBS"},
        {"unit": {"seconds per step": "s/step", "tokens per second": "tokens/sec", "%": "percent", "days": "d"},
         "precision": {"BF16": "bfloat16", "FP8": "fp8 (delayed scaling)"}}),
    "maxtext_v5p.csv": ({}, {"unit": {"TFLOP/sec/chip": "TFLOPs per chip", "%": "pct"},
                             "accelerator": {"TPU v5p": "tpu v5p"}}),
    "megatron_moe_zoo_qwen3.csv": ({"n_devices": "GPUs", "seq_len": "Seq len"},
                                   {"unit": {"Per GPU TF": "TF/GPU", "sec": "seconds", "TFLOPS": "TFLOP/s"}}),
    "torchtitan_performance.csv": ({}, {"unit": {"%": "percent"}, "model": {"Llama 3 8B": "LLAMA 3 8B"}}),
}
# What must come out the same: the figure, its identity, and the quantities its printed row prints.
SAME = ("source_id", "locator", "metric", "value", "unit", "precision", "workload", "model_id", "accelerator_id",
        "n_devices", "global_batch", "seq_len", "micro_batch", "evidence")


def respelled(path: Path, headers: Mapping[str, str], cells: Mapping[str, Mapping[str, str]]) -> bytes:
    text = "".join(line for line in path.read_text().splitlines(True) if not line.startswith("#"))
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([headers.get(h, h) for h in header])
    for row in rows[1:]:
        writer.writerow([cells.get(h, {}).get(cell, cell) for h, cell in zip(header, row, strict=True)])
    return out.getvalue().encode()


def stored_and_judged(engine: store.Engine, data: bytes, name: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    ingest_bytes(engine, data, name)
    body = "".join(line for line in data.decode().splitlines(True) if not line.startswith("#"))
    sources = {r["source_id"] for r in csv.DictReader(io.StringIO(body))}
    rows = store.results(engine).filter(pl.col("source_id").is_in(list(sources)))
    quantities = [json.dumps(quantities_of(a), sort_keys=True) for a in rows["attributes"].to_list()]
    as_printed = pl.when(pl.col("metric") != "printed").then(pl.col("unit"))  # an unread cell stays as printed
    figures = rows.with_columns(pl.Series("quantities", quantities), pl.col("value").round(9), unit=as_printed) \
        .select(*SAME, "quantities").sort([*SAME, "quantities"], nulls_last=True)
    locators = dict(rows.select("id", "locator").iter_rows())
    audit = table(AuditView(), engine).filter(pl.col("source_id").is_in(list(sources)))
    verdicts = audit.with_columns(pl.col("claim_id").replace_strict(locators, return_dtype=pl.String).alias("at")) \
        .select("at", "metric", "reported", "recomputed", "verdict", "relation").sort("at", "metric", "reported", "relation", nulls_last=True)
    return figures, verdicts


@pytest.mark.parametrize("name", sorted(RESPELLED))
def test_a_table_respelled_as_other_publishers_print_it_stores_and_judges_the_same(
        tmp_path: Path, name: str) -> None:
    engines = []
    for which in ("printed", "respelled"):
        engine = store.engine_from_url(f"duckdb:///{tmp_path / which}.duckdb")
        store.init_store(engine, Path(__file__).parents[2] / "data")
        engines.append(engine)
    path = FIXTURES / name
    original = stored_and_judged(engines[0], path.read_bytes(), name)
    mutated = stored_and_judged(engines[1], respelled(path, *RESPELLED[name]), f"respelled_{name}")
    assert original[0].height > 0 and original[1].height > 0
    assert mutated[0].to_dicts() == original[0].to_dicts()
    assert mutated[1].to_dicts() == original[1].to_dicts()
