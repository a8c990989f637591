"""Accelerators: one model's figures across hardware, per device, as MFU, per watt or per dollar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import flops, metrics
from perfledger.calc.normalise import NORMALIZATIONS, RL_STEP, Basis, measured_precision, normalised, vs_measured
from perfledger.views import hardware
from perfledger.views._shared import (
    ALL_WORKLOADS,
    FORMULA_NAMES,
    METRIC_LABELS,
    MIXED_WORKLOADS,
    TFLOPS_METRIC,
    TOKEN_METRIC,
    WORKLOAD_LABELS,
    WORKLOADS,
    CatalogRef,
    frame_of,
    rows_by_id,
    store_workload,
)
from perfledger.views.audit import WARNING_KEYS, implausible_warnings
from perfledger.views.columns import reading_order

NORM_LABELS = {
    "device": "per device",
    "mfu": "as MFU (dense peak of the row's precision)",
    "watt": "per watt of TDP",
    "dollar": "per $/device-hour",
}
SECTIONS = ("compare", "head", "catalog")
SECTION_LABELS = {"compare": "One model across hardware", "head": "Head to head", "catalog": "Catalog"}


@dataclass(frozen=True)
class AcceleratorView:
    section: str = u.key("s", "compare", choices=SECTIONS)
    workload: str = u.key("w", "pretrain", choices=WORKLOADS)
    models: tuple[str, ...] = u.key("m", ("llama2-70b",))
    metric: str = u.key("mt", TOKEN_METRIC, choices=(TOKEN_METRIC, TFLOPS_METRIC))
    norm: str = u.key("n", "device", choices=NORMALIZATIONS)
    usd_per_hour: float = u.key("usd", 2.0, low=0.01, high=1000.0)
    per_package: bool = u.key("pkg", False)
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    accelerators: tuple[str, ...] = u.key("acc", ("a100-80gb", "h200"))
    cross_source: bool = u.key("xs", False)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.section == "catalog":
            return "Every accelerator in the catalog: dense peaks, memory, bandwidth, TDP, and what is stored for it"
        work = WORKLOAD_LABELS[self.workload]
        if self.section == "head":
            scope = " vs ".join(self.accelerators) or "no accelerators"
            return (f"{scope}: every pair of stored {work} results on the same model and metric"
                    f"{' (across sources, on request)' if self.cross_source else ' from the same source'}, "
                    "each said to be like for like or not")
        basis = " (MI250 counted per package)" if self.per_package else ""
        norm = "" if self.norm == "device" else f", {NORM_LABELS[self.norm]}"
        models = ', '.join(self.models) or 'every model'
        return f"{METRIC_LABELS[self.metric]}{norm} on {models}, {work}{basis}"

    def catalog_ids(self) -> tuple[CatalogRef, ...]:
        """The model and accelerator ids the section names."""
        if self.section == "head":
            return (("acc", "accelerator", self.accelerators),)
        return (("m", "model", self.models),) if self.section == "compare" else ()

    def caveat(self) -> str:
        """What the view mixes on request ("" when it compares like with like)."""
        return MIXED_WORKLOADS if self.workload == ALL_WORKLOADS else ""

    def basis(self) -> Basis:
        return Basis(self.norm, METRIC_LABELS[self.metric], self.metric == TFLOPS_METRIC, self.per_package,
                     self.usd_per_hour, self.formula)


ACCEL_SCHEMA: dict[str, pl.DataType] = {
    "accelerator": pl.String(), "model": pl.String(), "normalized": pl.Float64(), "normalized unit": pl.String(),
    "warning": pl.String(), "workload": pl.String(), "precision": pl.String(), "devices": pl.Int64(),
    "value": pl.Float64(), "unit": pl.String(), "accelerator name": pl.String(), "framework": pl.String(),
    "metric": pl.String(), "peak TFLOPS used": pl.Float64(), "measured matmul TFLOPS": pl.Float64(),
    "MFU vs measured peak": pl.Float64(), "why": pl.String(), "source": pl.String(), "result id": pl.Int64(),
}


def _measured_peaks(engine: Engine) -> dict[tuple[str, str], float]:
    """The highest matmul TFLOPS the micro-benchmark measured, per (accelerator, precision)."""
    rows = store.results(engine, metric="matmul_tflops")
    best = rows.group_by("accelerator_id", "precision").agg(pl.col("value").max())
    return {(str(a), str(p)): float(v) for a, p, v in best.iter_rows() if a is not None and v}


def table(state: AcceleratorView, engine: Engine) -> pl.DataFrame:
    """The section's table: one model across hardware, the head-to-head pairs, or the catalog."""
    if state.section == "catalog":
        return reading_order(hardware.catalog_table(store.accelerators(engine),
                                                    store.results(engine, columns=_STORED_COLUMNS)), CATALOG_FIRST)
    if state.section == "head":
        rows = store.results(engine, accelerator_ids=list(state.accelerators), workload=store_workload(state.workload))
        return reading_order(hardware.head_to_head_table(rows, store.accelerators(engine), state.accelerators,
                                                         not state.cross_source), HEAD_FIRST)
    return _compare(state, engine)


_STORED_COLUMNS = ("accelerator_id", "model_id", "metric")
# What a 1440px screen shows first. The catalog: the accelerator, its dense peaks, memory and power, its source.
CATALOG_FIRST = ("accelerator", "name", "bf16 TFLOPS", "fp16 TFLOPS", "fp8 TFLOPS", "memory (GB)", "bandwidth (TB/s)",
                 "TDP (W)", "source", "stored results")
# The head-to-head: the pair, its ratio and both values, its caveats and source; the per-peak ratios to the right.
HEAD_FIRST = ("pair", "model", "metric", "ratio (second / first)", "first value", "second value", "caveats", "source")
# The comparison: the accelerator and model, the normalized figure, the audit's warning and the source.
COMPARE_FIRST = ("accelerator", "model", "normalized", "normalized unit", "warning", "source", "value", "unit",
                 "devices", "precision")


def _compare(state: AcceleratorView, engine: Engine) -> pl.DataFrame:
    rows = store.results(engine, metric=state.metric, model_ids=list(state.models) or None,
                         workload=store_workload(state.workload))
    warnings = implausible_warnings(engine)
    model_rows, acc_rows = store.catalog(engine)
    accs, models = rows_by_id(acc_rows), rows_by_id(model_rows)
    measured = _measured_peaks(engine) if state.norm == "mfu" else {}
    basis = state.basis()
    out = []
    for r in rows.to_dicts():
        n = normalised(r, accs.get(str(r["accelerator_id"])), basis, models)
        achievable = measured.get((str(r["accelerator_id"]), measured_precision(r))) if state.norm == "mfu" else None
        out.append({
            "accelerator": r["accelerator_id"], "accelerator name": r["accelerator_name"] or r["accelerator_as_printed"],
            "model": r["model_id"], "devices": r["n_devices"], "precision": r["precision"], "framework": r["framework"],
            "workload": r["workload"], "warning": _warning(warnings.get(tuple(r[k] for k in WARNING_KEYS)), r),
            "metric": r["metric"], "value": r["value"], "unit": r["unit"], "normalized": n.value,
            "normalized unit": n.unit, "peak TFLOPS used": n.peak, "measured matmul TFLOPS": achievable,
            "MFU vs measured peak": vs_measured(n.value, n.peak, achievable) if state.norm == "mfu" else None,
            "why": n.why, "source": r["source_id"], "result id": r["id"],
        })
    return reading_order(frame_of(out, ACCEL_SCHEMA).sort(["model", "normalized"], descending=[False, True],
                                                          nulls_last=True), COMPARE_FIRST)


def _warning(audit: str | None, row: dict[str, Any]) -> str | None:
    """The audit's warning, and for an RL post-training row (listed beside others only with w=all) what its
    throughput is."""
    rl = f"{RL_STEP}: not comparable with pretraining rows" if row.get("workload") == "rlhf" else None
    return "; ".join(w for w in (rl, audit) if w) or None


FORMULAS: tuple[Callable[..., Any], ...] = (
    metrics.model_tflops, metrics.peak_tflops, metrics.mfu, metrics.per_watt, metrics.per_dollar_hour,
    metrics.speedup)  # the head-to-head ratio
