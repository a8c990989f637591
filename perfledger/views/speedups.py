"""Speedups: candidate vs baseline on the same model and metric; published ratios shown as stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import flops, like_for_like, metrics
from perfledger.calc.normalise import recomputed_tflops, safe
from perfledger.calc.pairing import first_by_key, speedup_pairs
from perfledger.views._shared import (
    ALL_WORKLOADS,
    FORMULA_NAMES,
    MIXED_WORKLOADS,
    TFLOPS_METRIC,
    TOKEN_METRIC,
    WORKLOADS,
    CatalogRef,
    frame_of,
    of_workload,
    rows_by_id,
)
from perfledger.views.columns import reading_order
from perfledger.views.speedup_presets import RATIO_METRIC, Preset, Side, presets

CUSTOM = "custom"  # the page's own comparison, built from the URL's sides
SPEEDUP_PRESETS = (*(p.id for p in presets()), CUSTOM)
PRESET_LABELS = {**{p.id: p.label for p in presets()}, CUSTOM: "Build your own"}
PRESET_TITLES = {**{p.id: p.title for p in presets()}, CUSTOM: "Custom comparison"}
PRESETS: dict[str, Preset] = {p.id: p for p in presets()}


@dataclass(frozen=True)
class SpeedupView:
    preset: str = u.key("p", SPEEDUP_PRESETS[0], choices=SPEEDUP_PRESETS)
    models: tuple[str, ...] = u.key("m", ("llama2-7b", "llama2-13b", "llama2-70b"))
    metric: str = u.key("mt", TOKEN_METRIC, choices=(TOKEN_METRIC, "tokens_per_s", TFLOPS_METRIC, "mfu"))
    base_acc: str = u.key("ba", "a100-80gb")
    cand_acc: str = u.key("ca", "h200")
    base_fw: str = u.key("bf", "")
    cand_fw: str = u.key("cf", "")
    base_ver: str = u.key("bv", "")
    cand_ver: str = u.key("cv", "")
    base_strategy: str = u.key("bs", "")
    cand_strategy: str = u.key("cs", "")
    base_precision: str = u.key("bp", "")
    cand_precision: str = u.key("cp", "")
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    workload: str = u.key("w", "pretrain", choices=WORKLOADS)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def caveat(self) -> str:
        """What a custom comparison mixes on request ("" when it compares like with like)."""
        return MIXED_WORKLOADS if self.preset == CUSTOM and self.workload == ALL_WORKLOADS else ""

    def describe(self) -> str:
        if self.preset != CUSTOM:
            return PRESET_TITLES[self.preset]
        scope = ", ".join(self.models) or "every model"
        return f"{self.cand_side().label()} vs {self.base_side().label()} on {scope} ({self.workload})"

    def catalog_ids(self) -> tuple[CatalogRef, ...]:
        """The model and accelerator ids a custom comparison names (a preset names its own)."""
        if self.preset != CUSTOM:
            return ()
        return (("m", "model", self.models), ("ba", "accelerator", (self.base_acc,)),
                ("ca", "accelerator", (self.cand_acc,)))

    def base_side(self) -> Side:
        return Side(self.base_acc, self.base_fw, self.base_ver, self.base_strategy, self.base_precision)

    def cand_side(self) -> Side:
        return Side(self.cand_acc, self.cand_fw, self.cand_ver, self.cand_strategy, self.cand_precision)


SPEEDUP_SCHEMA: dict[str, pl.DataType] = {  # what is compared, the ratio and its caveats first; details after
    "model": pl.String(), "baseline": pl.String(), "candidate": pl.String(), "speedup (x)": pl.Float64(),
    "caveats": pl.String(), "kind": pl.String(),
    "baseline value": pl.Float64(), "candidate value": pl.Float64(), "metric": pl.String(),
    "baseline TFLOPS/device published": pl.Float64(), "baseline TFLOPS/device recomputed": pl.Float64(),
    "candidate TFLOPS/device published": pl.Float64(), "candidate TFLOPS/device recomputed": pl.Float64(),
    "baseline devices": pl.Int64(), "candidate devices": pl.Int64(),
    "source": pl.String(), "baseline result id": pl.Int64(), "candidate result id": pl.Int64(),
}


def caveat_list(table_frame: pl.DataFrame) -> list[str]:
    """The distinct like-for-like warnings of a speedups table (stored-ratio notes left out)."""
    items = {c.strip() for cell in table_frame["caveats"].drop_nulls().to_list() for c in cell.split(";")}
    return sorted(c for c in items if c and "published ratio" not in c)


def not_like_for_like(table_frame: pl.DataFrame) -> str:
    """The page's warning when a computed pair is not like for like (perfledger.calc.like_for_like), naming the
    aspects that differ: "Not like for like: precision, framework version"; "" when every pair is."""
    names = like_for_like.aspects_in(table_frame["caveats"].to_list())
    return f"Not like for like: {', '.join(names)}" if names else ""


def _resolved(state: SpeedupView) -> Preset:
    if state.preset != CUSTOM:
        return PRESETS[state.preset]
    cand = state.cand_side()
    return Preset(state.models, state.metric, state.base_side(), cand,
                  (("accelerator_id", cand.accelerator),) if cand.accelerator else ())


def _label(row: Mapping[str, Any]) -> str:
    version = row.get("framework_version") or ""
    framework = None if version.lower().startswith(str(row.get("framework") or "-").lower()) else row.get("framework")
    parts = [row.get("accelerator_id"), framework, version, row.get("strategy"), row.get("precision")]
    return " · ".join(str(p) for p in parts if p not in (None, "", "unstated"))


def _caveats(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    return like_for_like.details(like_for_like.differences(base, cand))


_TFLOPS_KEYS = ("source_id", "accelerator_id", "model_id", "n_devices", "framework_version", "seq_len")


def _pair_row(published: Mapping[tuple[Any, ...], float], models: Mapping[str, dict[str, Any]],
              base: dict[str, Any], cand: dict[str, Any], formula: str) -> dict[str, Any]:
    ratio, why = safe(lambda: metrics.speedup(float(cand["value"]), float(base["value"])))

    def recomputed(r: Mapping[str, Any]) -> float | None:
        return recomputed_tflops(r, models, formula)[0] if base["metric"] == TOKEN_METRIC else None

    def stated(r: Mapping[str, Any]) -> float | None:
        return published.get(tuple(r[k] for k in _TFLOPS_KEYS))

    same_source = cand["source_id"] == base["source_id"]
    return {
        "model": cand["model_id"], "kind": "computed from two stored results",
        "baseline": _label(base), "candidate": _label(cand),
        "baseline devices": base["n_devices"], "candidate devices": cand["n_devices"], "metric": cand["metric"],
        "baseline value": base["value"], "candidate value": cand["value"], "speedup (x)": ratio,
        "baseline TFLOPS/device published": stated(base), "baseline TFLOPS/device recomputed": recomputed(base),
        "candidate TFLOPS/device published": stated(cand), "candidate TFLOPS/device recomputed": recomputed(cand),
        "caveats": "; ".join(x for x in (_caveats(base, cand), why) if x),
        "source": cand["source_id"] if same_source else f"{base['source_id']}; {cand['source_id']}",
        "baseline result id": base["id"], "candidate result id": cand["id"],
    }


def _computed_pairs(rows: pl.DataFrame, preset: Preset, models: Mapping[str, dict[str, Any]],
                    formula: str) -> list[dict[str, Any]]:
    if preset.base is None or preset.cand is None:
        return []
    on_metric = rows.filter(pl.col("metric") == preset.metric)
    if preset.source:
        on_metric = on_metric.filter(pl.col("source_id") == preset.source)
    pairs = speedup_pairs(on_metric.filter(preset.base.expr()).to_dicts(),
                          on_metric.filter(preset.cand.expr()).to_dicts())
    published = first_by_key(rows.filter(pl.col("metric") == TFLOPS_METRIC).select(*_TFLOPS_KEYS, "value").iter_rows())
    return [_pair_row(published, models, base, cand, formula) for base, cand in pairs]


def _stored_ratios(rows: pl.DataFrame, preset: Preset) -> list[dict[str, Any]]:
    stored = rows.filter(pl.col("metric") == RATIO_METRIC, preset.stored_expr().fill_null(False))
    if preset.source:
        stored = stored.filter(pl.col("source_id") == preset.source)
    return [
        {
            "model": r["model_id"], "kind": "stored ratio (published)",
            "baseline": r["baseline"] or "named in the source", "candidate": _label(r),
            "candidate devices": r["n_devices"], "metric": RATIO_METRIC, "speedup (x)": r["value"],
            "caveats": "a published ratio: shown as stored, not recomputed",
            "source": r["source_id"], "candidate result id": r["id"],
        }
        for r in stored.to_dicts()
    ]


def table(state: SpeedupView, engine: Engine) -> pl.DataFrame:
    """Candidate vs baseline for each model: speedup = candidate / baseline, TFLOPS published and recomputed."""
    preset = _resolved(state)
    rows = store.results(engine, model_ids=list(preset.models) if preset.models else None)
    if state.preset == CUSTOM:
        rows = of_workload(rows, state.workload)
    models = rows_by_id(store.models(engine))
    frame = frame_of(_computed_pairs(rows, preset, models, state.formula) + _stored_ratios(rows, preset),
                     SPEEDUP_SCHEMA)
    order = {m: i for i, m in enumerate(preset.models)}
    return reading_order(frame.with_columns(pl.col("model").replace_strict(order, default=len(order)).alias("_o")).sort(
        ["kind", "_o", "candidate devices"], nulls_last=True).drop("_o"), SHOWN_FIRST)


# What a 1440px screen shows first: the pair, its ratio, the caveats and the source; the published TFLOPS of each side
# next (their names whole: at 90 px they read "baseline TFLO").
SHOWN_FIRST = ("model", "baseline", "candidate", "speedup (x)", "caveats", "source", "baseline TFLOPS/device published",
               "candidate TFLOPS/device published")


FORMULAS: tuple[Callable[..., Any], ...] = (metrics.speedup, metrics.model_tflops, flops.nemo)
