"""Scaling: throughput vs devices with the ideal line and efficiency; sensitivity studies as stored ratios."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import names, store
from perfledger import urlstate as u
from perfledger.calc import metrics
from perfledger.calc.pairing import SERIES_COLUMNS, is_scaling_claim, points_by_devices, scaling_series
from perfledger.views._shared import (
    ALL_WORKLOADS,
    MIXED_WORKLOADS,
    TOKEN_METRIC,
    WORKLOAD_LABELS,
    WORKLOADS,
    CatalogRef,
    frame_of,
    store_workload,
)
from perfledger.views.columns import reading_order
from perfledger.views.speedup_presets import presets

SECTIONS = ("scaling", "sensitivity")
# The Scaling section draws one chart at a time: two stacked (480 px of lines, up to 60 bars) pushed the table
# below the fold and doubled the browser's drawing.
CHARTS = ("computed", "stored")
CHART_LABELS = {"computed": "Throughput vs devices", "stored": "Efficiency as published"}


@dataclass(frozen=True)
class ScalingView:
    section: str = u.key("s", "scaling", choices=SECTIONS)
    workload: str = u.key("w", "pretrain", choices=WORKLOADS)
    models: tuple[str, ...] = u.key("m", ())
    accelerators: tuple[str, ...] = u.key("a", ())
    chart: str = u.key("c", "computed", choices=CHARTS)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        what = ("Throughput vs devices and scaling efficiency" if self.section == "scaling"
                else "Sensitivity studies (stored ratios)")
        scope = [*self.models, *self.accelerators]
        return f"{what}, {WORKLOAD_LABELS[self.workload]}{' for ' + ', '.join(scope) if scope else ''}"

    def catalog_ids(self) -> tuple[CatalogRef, ...]:
        return (("m", "model", self.models), ("a", "accelerator", self.accelerators))

    def caveat(self) -> str:
        """What the view mixes on request ("" when it compares like with like)."""
        return MIXED_WORKLOADS if self.workload == ALL_WORKLOADS else ""


SCALING_SCHEMA: dict[str, pl.DataType] = {
    "series": pl.String(), "devices": pl.Int64(), "scaling efficiency": pl.Float64(),
    "throughput (tokens/s, all devices)": pl.Float64(), "ideal linear (tokens/s)": pl.Float64(),
    "scaling": pl.String(), "model": pl.String(), "workload": pl.String(), "accelerator": pl.String(),
    "metric": pl.String(), "value": pl.Float64(), "unit": pl.String(), "kind": pl.String(), "baseline": pl.String(),
    "note": pl.String(), "source": pl.String(), "result id": pl.Int64(),
}
SCALING_METRICS = ("tokens_per_s_per_device", "tokens_per_s", "relative_throughput", "scaling_efficiency")

# A series is calc.pairing's (source, model, workload, precision, strategy, accelerator, ...) of one metric.
_SERIES_COLUMNS = (*SERIES_COLUMNS, "metric")
_RECORD_COLUMNS = ("n_devices", "value", "unit", "id")
_BASE_INPUTS = (*_SERIES_COLUMNS, *_RECORD_COLUMNS, "global_batch", "baseline", "note")
# and the columns the Speedups presets filter their published ratios by (see _shown_on_speedups)
_SCALING_INPUTS = (*_BASE_INPUTS, *sorted({c for p in presets() for c, _ in p.stored} - set(_BASE_INPUTS)))


def _series_name() -> pl.Expr:
    """A series' name: its non-empty key values joined by " · ", its metric by name (one Polars expression: a Python
    function over 40,000 rows took 0.4 s)."""
    parts = [pl.col(c).cast(pl.String) if c != "metric" else pl.col(c).replace_strict(names.metric_names(), default=pl.col(c))
             for c in _SERIES_COLUMNS]
    return pl.concat_str([pl.when(p != "").then(p) for p in parts], separator=" · ", ignore_nulls=True)


def _record(series: str, r: Mapping[str, Any], thr: float | None, ideal: float | None, eff: float | None,
            kind: str, baseline: str, note: str, scaling: str = "") -> dict[str, Any]:
    return {"series": series, "scaling": scaling or None, "model": r["model_id"], "workload": r["workload"], "accelerator": r["accelerator_id"], "devices": r["n_devices"],
            "metric": r["metric"], "value": r["value"], "unit": r["unit"], "throughput (tokens/s, all devices)": thr,
            "ideal linear (tokens/s)": ideal, "scaling efficiency": eff, "kind": kind, "baseline": baseline,
            "note": note, "source": r["source_id"], "result id": r["id"]}


def _computed(rows: pl.DataFrame) -> list[dict[str, Any]]:
    throughput = rows.filter(pl.col("metric").is_in([TOKEN_METRIC, "tokens_per_s"]), pl.col("n_devices").is_not_null())
    members = (throughput.select(*_SERIES_COLUMNS, *_RECORD_COLUMNS, "global_batch",  # costs per column
                                 _series_name().alias("_series"))
               # a series at one device count has nothing to scale (scaling_series drops it): 37,000 of 39,000
               # throughput rows of the full store, not turned into dicts
               .filter(pl.col("n_devices").n_unique().over("_series") >= 2).to_dicts())
    return [_record(p.series, p.row, p.throughput, p.ideal, p.efficiency, "computed from stored throughputs",
                    f"{p.base_devices} devices in this series", p.why, p.scaling)
            for p in scaling_series(members, itemgetter("_series"), TOKEN_METRIC)]


def _shown_on_speedups() -> pl.Expr:
    """A published ratio one of the Speedups presets shows (data/speedup_presets.csv): a comparison of two setups
    (H200 vs A100, FSDP vs 3D, RLHF with vs without TensorRT-LLM), neither a study of scale nor of one setting,
    is read there and not here. A row no preset names stays, whatever its accelerator or strategy."""
    shown = [p.shows_ratio() for p in presets()]
    return pl.any_horizontal(shown).fill_null(False) if shown else pl.lit(False)


def _stored(rows: pl.DataFrame, sensitivity: bool) -> list[dict[str, Any]]:
    rel = rows.filter(pl.col("metric").is_in(["relative_throughput", "scaling_efficiency"]),
                      ~_shown_on_speedups()).select(*_SERIES_COLUMNS, *_RECORD_COLUMNS, "baseline", "note")
    out = []
    for r in rel.to_dicts():
        if is_scaling_claim(r) == sensitivity:
            continue
        eff = r["value"] if r["metric"] == "scaling_efficiency" else None
        out.append(_record(f"{r['source_id']} · {r['model_id']} · {r['accelerator_id']}", r, None, None, eff,
                           "stored (published)", r["baseline"] or "not stated in the source", (r["note"] or "")[:200]))
    return out


def table(state: ScalingView, engine: Engine) -> pl.DataFrame:
    rows = store.results(engine, metric=list(SCALING_METRICS), model_ids=list(state.models) or None,
                         accelerator_ids=list(state.accelerators) or None, workload=store_workload(state.workload),
                         columns=_SCALING_INPUTS)
    sensitivity = state.section == "sensitivity"
    records = ([] if sensitivity else _computed(rows)) + _stored(rows, sensitivity)
    return reading_order(frame_of(records, SCALING_SCHEMA).sort(["kind", "series", "devices"], nulls_last=True),
                         SHOWN_FIRST)


# What a 1440px screen shows first: what scaled on what, the figure (computed efficiency or the stored ratio) and its
# baseline and source; the long series label to the right.
SHOWN_FIRST = ("model", "accelerator", "devices", "scaling efficiency", "value", "unit", "source", "baseline",
               "throughput (tokens/s, all devices)", "kind", "ideal linear (tokens/s)", "scaling")


def filters_label(state: ScalingView) -> str:
    """The folded filters, said on their fold: "Filters: pretraining · every model · every accelerator"."""
    models = ", ".join(state.models) or "every model"
    accelerators = ", ".join(state.accelerators) or "every accelerator"
    return f"Filters: {WORKLOAD_LABELS[state.workload]} · {models} · {accelerators}"


def rows_of_kind(table_frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    """Rows whose `kind` starts with `prefix` ("computed" or "stored")."""
    return table_frame.filter(pl.col("kind").str.starts_with(prefix))


def chart_points(table_frame: pl.DataFrame) -> pl.DataFrame:
    """The Throughput vs devices chart's points: the table's computed rows, one point per series and device count
    (perfledger.calc.pairing.points_by_devices)."""
    return points_by_devices(rows_of_kind(table_frame, "computed"))


FORMULAS: tuple[Callable[..., Any], ...] = (metrics.scaling_efficiency,)
