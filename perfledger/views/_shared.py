"""What several page modules share: metric names and labels, the FLOPs formula choice, small frame helpers."""

from __future__ import annotations

from typing import Any

import polars as pl

from perfledger import names
from perfledger.calc import flops
from perfledger.urlstate import quoted
from perfledger.vocabulary import Metric

FORMULA_NAMES = tuple(flops.FORMULAS)
TOKEN_METRIC = Metric.TOKENS_PER_S_PER_DEVICE.value
TFLOPS_METRIC = Metric.MODEL_TFLOPS_PER_DEVICE.value

# The metrics a comparing page offers, under their display names (perfledger.names).
METRIC_LABELS = {m.value: names.metric_name(m) for m in (Metric.TOKENS_PER_S_PER_DEVICE, Metric.TOKENS_PER_S,
                                                         Metric.MODEL_TFLOPS_PER_DEVICE, Metric.MFU)}


def si(x: float) -> str:
    """A count with an SI suffix: 300e9 -> "300B"."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def rows_by_id(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in frame.to_dicts()}


def contains(column: str, value: str) -> pl.Expr:
    """Case-insensitive substring match; a null cell matches nothing."""
    return pl.col(column).str.to_lowercase().str.contains(value.lower(), literal=True).fill_null(False)


def frame_of(records: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Records as a frame of `schema` (an empty frame of that schema when there are none)."""
    return pl.DataFrame(records, schema=schema, strict=False) if records else pl.DataFrame(schema=schema)


# Workloads a comparing page filters on ("all" mixes them, and the page says so); the stored values come from
# perfledger.vocabulary.Workload.
ALL_WORKLOADS = "all"
WORKLOADS = ("pretrain", "sft", "lora_finetune", "rlhf", ALL_WORKLOADS)
WORKLOAD_LABELS = {"pretrain": "pretraining", "sft": "supervised fine-tuning (SFT)",
                   "lora_finetune": "LoRA / PEFT fine-tuning", "rlhf": "RLHF", ALL_WORKLOADS: "every workload (mixed)"}
MIXED_WORKLOADS = ("workloads mixed on request: pretraining and fine-tuning figures are not like for like "
                   "(fine-tuning sees shorter batches and LoRA skips the frozen weights' gradients)")


def store_workload(workload: str) -> str | None:
    """The store filter (store.results' `workload`) for a workload choice: None, no filter, for "all"."""
    return None if workload == ALL_WORKLOADS else workload


def of_workload(frame: pl.DataFrame, workload: str) -> pl.DataFrame:
    """The rows of one workload; every row when `workload` is "all"."""
    return frame if workload == ALL_WORKLOADS else frame.filter(pl.col("workload") == workload)


_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_count(text: str) -> float:
    """A count typed as 300B, 1.2T, 50M, 4k or 3e11; ValueError with a plain reason when it is none of these."""
    raw = text.strip().replace(",", "").replace("_", "")
    scale = _SUFFIXES.get(raw[-1:].lower(), 1.0) if raw else 1.0
    number = raw[:-1] if scale != 1.0 else raw
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"{text!r} is not a count: type e.g. 300B, 1.2T or 3e11") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{text!r} should be a positive count")
    return value


# A view's catalog references, as (URL key, "model" or "accelerator", the ids it names): a page says which of them
# the catalog does not hold (unknown_ids) rather than showing an empty result in silence.
CatalogRef = tuple[str, str, tuple[str, ...]]


def unknown_ids(refs: tuple[CatalogRef, ...], known: dict[str, set[str]]) -> list[str]:
    """One sentence per id a view names that is not in the catalog (`known`: kind -> ids), quoting it as typed.

    >>> unknown_ids((("m", "model", ("llama2-7b", "llama9")),), {"model": {"llama2-7b"}})
    ["m='llama9' is not a model id in the catalog: nothing is stored for it; pick one from the list."]
    """
    return [f"{key}={quoted(i)} is not {'an' if kind[0] in 'aeiou' else 'a'} {kind} id in the catalog: nothing is "
            "stored for it; pick one from the list."
            for key, kind, ids in refs for i in ids if i and i not in known.get(kind, set())]
