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
from perfledger.calc.normalise import NORMALIZATIONS, Basis, measured_precision, normalised, vs_measured
from perfledger.views._shared import FORMULA_NAMES, METRIC_LABELS, TFLOPS_METRIC, TOKEN_METRIC, frame_of, rows_by_id

NORM_LABELS = {
    "device": "per device",
    "mfu": "as MFU (dense peak of the row's precision)",
    "watt": "per watt of TDP",
    "dollar": "per $/device-hour",
}


@dataclass(frozen=True)
class AcceleratorView:
    models: tuple[str, ...] = u.key("m", ("llama2-70b",))
    metric: str = u.key("mt", TOKEN_METRIC, choices=(TOKEN_METRIC, TFLOPS_METRIC))
    norm: str = u.key("n", "device", choices=NORMALIZATIONS)
    usd_per_hour: float = u.key("usd", 2.0, low=0.01, high=1000.0)
    per_package: bool = u.key("pkg", False)
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        basis = " (MI250 counted per package)" if self.per_package else ""
        norm = "" if self.norm == "device" else f", {NORM_LABELS[self.norm]}"
        return f"{METRIC_LABELS[self.metric]}{norm} on {', '.join(self.models) or 'every model'}{basis}"

    def basis(self) -> Basis:
        return Basis(self.norm, METRIC_LABELS[self.metric], self.metric == TFLOPS_METRIC, self.per_package,
                     self.usd_per_hour, self.formula)


ACCEL_SCHEMA: dict[str, pl.DataType] = {
    "accelerator": pl.String(), "accelerator name": pl.String(), "model": pl.String(), "devices": pl.Int64(),
    "precision": pl.String(), "framework": pl.String(), "metric": pl.String(),
    "value": pl.Float64(), "unit": pl.String(), "normalized": pl.Float64(), "normalized unit": pl.String(),
    "peak TFLOPS used": pl.Float64(), "measured matmul TFLOPS": pl.Float64(), "MFU vs measured peak": pl.Float64(),
    "why": pl.String(), "source": pl.String(), "result id": pl.Int64(),
}


def _measured_peaks(engine: Engine) -> dict[tuple[str, str], float]:
    """The highest matmul TFLOPS the micro-benchmark measured, per (accelerator, precision)."""
    rows = store.results(engine, metric="matmul_tflops")
    best = rows.group_by("accelerator_id", "precision").agg(pl.col("value").max())
    return {(str(a), str(p)): float(v) for a, p, v in best.iter_rows() if a is not None and v}


def table(state: AcceleratorView, engine: Engine) -> pl.DataFrame:
    rows = store.results(engine, metric=state.metric, model_ids=list(state.models) or None)
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
            "metric": r["metric"], "value": r["value"], "unit": r["unit"], "normalized": n.value,
            "normalized unit": n.unit, "peak TFLOPS used": n.peak, "measured matmul TFLOPS": achievable,
            "MFU vs measured peak": vs_measured(n.value, n.peak, achievable) if state.norm == "mfu" else None,
            "why": n.why, "source": r["source_id"], "result id": r["id"],
        })
    return frame_of(out, ACCEL_SCHEMA).sort(["model", "normalized"], descending=[False, True], nulls_last=True)


FORMULAS: tuple[Callable[..., Any], ...] = (
    metrics.model_tflops, metrics.peak_tflops, metrics.mfu, metrics.per_watt, metrics.per_dollar_hour)
