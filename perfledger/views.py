"""One typed view state per dashboard page, and the table each page shows; pure (no Streamlit).

Every state round-trips through the URL (perfledger.urlstate: short keys, defaults left out) and says what
it shows (`describe()`). `table(slug, state, engine)` is the one place a page's figures are computed, by
composing perfledger.calc functions over store frames; `export(slug, query, engine)` renders the same table
as the bytes the page's Download button and `python -m perfledger export PAGE "QUERY"` both give.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import audit, flops, metrics, steady
from perfledger.calc import formula_of as calc_formula_of
from perfledger.errors import InvalidInput, InvalidQuery

SLUGS = ("overview", "speedups", "accelerators", "scaling", "time-to-train", "runs", "audit", "sources")
FORMULA_NAMES = tuple(flops.FORMULAS)
TOKEN_METRIC = "tokens_per_s_per_device"
TFLOPS_METRIC = "model_tflops_per_device"


# ------------------------------------------------------------------------------------------ states


@dataclass(frozen=True)
class OverviewView:
    by: str = u.key("by", "kind", choices=("kind", "accelerator", "model", "metric", "framework"))
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        return f"Result rows in the ledger, by {self.by}"


SPEEDUP_PRESETS = ("nemo", "fsdp", "rlhf", "custom")


@dataclass(frozen=True)
class SpeedupView:
    preset: str = u.key("p", "nemo", choices=SPEEDUP_PRESETS)
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
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.preset != "custom":
            return PRESET_TITLES[self.preset]
        return f"{_side_label(self.cand_side())} vs {_side_label(self.base_side())} on {', '.join(self.models) or 'every model'}"

    def base_side(self) -> Side:
        return Side(self.base_acc, self.base_fw, self.base_ver, self.base_strategy, self.base_precision)

    def cand_side(self) -> Side:
        return Side(self.cand_acc, self.cand_fw, self.cand_ver, self.cand_strategy, self.cand_precision)


NORMALIZATIONS = ("device", "mfu", "watt", "dollar")


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


@dataclass(frozen=True)
class ScalingView:
    section: str = u.key("s", "scaling", choices=("scaling", "sensitivity"))
    models: tuple[str, ...] = u.key("m", ())
    accelerators: tuple[str, ...] = u.key("a", ())
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        what = "Throughput vs devices and scaling efficiency" if self.section == "scaling" else "Sensitivity studies (stored ratios)"
        scope = [*self.models, *self.accelerators]
        return f"{what}{' for ' + ', '.join(scope) if scope else ''}"


@dataclass(frozen=True)
class TimeToTrainView:
    model: str = u.key("m", "gpt3-175b")
    tokens: float = u.key("tok", 300e9, low=1.0)
    accelerator: str = u.key("a", "a800-80gb")
    devices: int = u.key("n", 1024, low=1, high=1_000_000)
    mode: str = u.key("mode", "peak", choices=("peak", "measured"))
    efficiency: float = u.key("e", 0.5, low=0.001, high=1.0)
    precision: str = u.key("p", "fp16", choices=("fp32", "tf32", "fp16", "bf16", "fp8"))
    row: int = u.key("r", 0, low=0)
    usd_per_hour: float = u.key("usd", 0.0, low=0.0, high=1000.0)
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        how = f"{self.efficiency:.0%} of dense {self.precision} peak" if self.mode == "peak" else "a measured tokens/s/device"
        return f"{self.model}: {_si(self.tokens)} tokens on {self.devices} × {self.accelerator} at {how}"


@dataclass(frozen=True)
class RunsView:
    run: int = u.key("run", 0, low=0)
    vs: int = u.key("vs", 0, low=0)
    first: int = u.key("w0", -1, low=-1)
    last: int = u.key("w1", -1, low=-1)
    warmup_fraction: float = u.key("wf", 0.1, low=0.0, high=0.5)
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        if self.run and self.vs:
            return f"Run {self.run} compared with run {self.vs}"
        return f"Run {self.run}: steps and steady state" if self.run else "Ingested runs"

    def rule(self) -> steady.SteadyRule:
        return steady.SteadyRule(
            warmup_fraction=self.warmup_fraction,
            first_step=self.first if self.first >= 0 else None,
            last_step=self.last if self.last >= 0 else None,
        )


VERDICTS = audit.VERDICTS


@dataclass(frozen=True)
class AuditView:
    verdicts: tuple[str, ...] = u.key("v", (), choices=VERDICTS)
    sources: tuple[str, ...] = u.key("src", ())
    models: tuple[str, ...] = u.key("m", ())
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    tolerance: float = u.key("tol", audit.DEFAULT_TOLERANCE, low=0.0, high=1.0)
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        scope = ", ".join([*self.verdicts, *self.sources, *self.models]) or "every claim"
        return f"Claims checked against recomputation ({scope}; tolerance {self.tolerance:.0%})"


@dataclass(frozen=True)
class SourcesView:
    source: str = u.key("src", "")
    kinds: tuple[str, ...] = u.key("k", ())
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        return f"Rows backed by source {self.source}" if self.source else "Every source and the rows it backs"


PAGE_STATES: dict[str, type[Any]] = {
    "overview": OverviewView,
    "speedups": SpeedupView,
    "accelerators": AcceleratorView,
    "scaling": ScalingView,
    "time-to-train": TimeToTrainView,
    "runs": RunsView,
    "audit": AuditView,
    "sources": SourcesView,
}

METRIC_LABELS = {
    TOKEN_METRIC: "tokens/s/device",
    "tokens_per_s": "tokens/s (all devices)",
    TFLOPS_METRIC: "model TFLOP/s/device",
    "mfu": "MFU",
}
NORM_LABELS = {
    "device": "per device",
    "mfu": "as MFU (dense peak of the row's precision)",
    "watt": "per watt of TDP",
    "dollar": "per $/device-hour",
}


def state_from_query(slug: str, query: u.QueryLike) -> Any:
    """The page's typed state from a URL query (st.query_params, parse_qsl pairs or a dict)."""
    try:
        cls = PAGE_STATES[slug]
    except KeyError:
        raise InvalidQuery(f"unknown page {slug!r}; pages: {', '.join(SLUGS)}") from None
    return u.from_query(cls, query)


def link(slug: str, state: Any | None = None, **changes: Any) -> str:
    """A relative link to a page's view (`/speedups?p=fsdp`), defaults left out."""
    from dataclasses import replace

    base = state if state is not None else PAGE_STATES[slug]()
    qs = u.query_string(replace(base, **changes) if changes else base)
    return f"/{slug}{'?' + qs if qs else ''}"


HEADLINES: tuple[tuple[str, str, str], ...] = (
    ("NeMo: H200 vs A100 on Llama 2 (3.7x, 4.0x, 4.2x)", "speedups", ""),
    ("FSDP vs 3D parallelism, GPT-20B on 8-128 H100", "speedups", "p=fsdp"),
    ("RLHF with vs without TensorRT-LLM", "speedups", "p=rlhf"),
    ("Llama 2 70B across accelerators, as MFU", "accelerators", "n=mfu"),
    ("Emani et al.: GPT-2 XL scaling efficiency", "scaling", "m=gpt2-xl"),
    ("GPT-3 175B, 300B tokens on 1024 A800 at 50%", "time-to-train", ""),
    ("Llama 2 70B, 1B tokens on 8 H200 (measured)", "time-to-train", "m=llama2-70b&tok=1000000000&a=h200&n=8&mode=measured&usd=4"),
    ("Every claim audited", "audit", ""),
)


# ----------------------------------------------------------------------------------- dispatch, export


def table(slug: str, state: Any, engine: Engine) -> pl.DataFrame:
    """The table the page `slug` shows for `state`."""
    return _TABLES[slug](state, engine)


def export(slug: str, query: str, engine: Engine, fmt: Literal["csv", "json"] = "csv") -> bytes:
    """The page's table for a URL query string, as CSV (Polars write_csv) or JSON records; exact bytes."""
    state = state_from_query(slug, parse_qsl(query.lstrip("?"), keep_blank_values=True))
    return render(table(slug, state, engine), fmt)


def render(frame: pl.DataFrame, fmt: Literal["csv", "json"] = "csv") -> bytes:
    if fmt == "csv":
        buffer = io.BytesIO()  # straight to bytes: write_csv() -> str -> encode() copied the file twice (1.7x)
        frame.write_csv(buffer)
        return buffer.getvalue()
    if fmt == "json":
        return (json.dumps(frame.to_dicts(), default=str, allow_nan=False, indent=1) + "\n").encode()
    raise InvalidQuery(f"unknown export format {fmt!r}; use csv or json")


formula_of = calc_formula_of


FORMULAS_BY_PAGE: dict[str, tuple[Callable[..., Any], ...]] = {
    "overview": (),
    "speedups": (metrics.speedup, metrics.model_tflops, flops.nemo),
    "accelerators": (metrics.model_tflops, metrics.peak_tflops, metrics.mfu, metrics.per_watt, metrics.per_dollar_hour),
    "scaling": (metrics.scaling_efficiency,),
    "time-to-train": (metrics.time_to_train_from_peak_s, metrics.time_to_train_s, metrics.cost_to_train_usd),
    "runs": (steady.steady_state, metrics.model_tflops),
    "audit": (audit.relative_difference, metrics.model_tflops, metrics.mfu),
    "sources": (),
}


# --------------------------------------------------------------------------------------- shared bits


def _si(x: float) -> str:
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def _rows_by_id(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in frame.to_dicts()}


def _safe(fn: Callable[[], float]) -> tuple[float | None, str]:
    """(value, "") or (None, why) for one calc call; a calc refusal becomes the `why` sentence."""
    try:
        value = fn()
    except InvalidInput as exc:
        return None, str(exc)
    return (value, "") if math.isfinite(value) else (None, "not a finite number")


def _flops_for(row: Mapping[str, Any], models: Mapping[str, dict[str, Any]], formula: str) -> tuple[float | None, str]:
    model = models.get(str(row.get("model_id")))
    if model is None:
        return None, f"model {row.get('model_as_printed') or row.get('model_id')!r} is not in the catalog"
    seq = row.get("seq_len") or model.get("seq_len")
    note = "" if row.get("seq_len") else f"seq len not stated; model default {seq} used"
    value, why = _safe(lambda: flops.flops_per_token(flops.ModelShape.from_row(model), int(seq or 0), formula))
    return value, why or note


def _recomputed_tflops(row: Mapping[str, Any], models: Mapping[str, dict[str, Any]], formula: str) -> tuple[float | None, str]:
    fpt, why = _flops_for(row, models, formula)
    if fpt is None:
        return None, why
    value, why2 = _safe(lambda: metrics.model_tflops(float(row["value"]), fpt))
    return value, why2 or why


def _eq(column: str, value: str) -> pl.Expr:
    return pl.col(column).str.to_lowercase().str.contains(value.lower(), literal=True).fill_null(False)


# -------------------------------------------------------------------------------------------- overview


def overview_table(state: OverviewView, engine: Engine) -> pl.DataFrame:
    column = {"kind": "source_kind", "accelerator": "accelerator_id", "model": "model_id", "metric": "metric", "framework": "framework"}[state.by]
    counts = store.result_counts(engine, column)
    return (
        counts.select(pl.col(column).fill_null("(not stated)").alias(state.by),
                      pl.col("result rows").cast(pl.UInt32), pl.col("sources").cast(pl.UInt32))
        .sort(["result rows", state.by], descending=[True, False])
    )


# -------------------------------------------------------------------------------------------- speedups


@dataclass(frozen=True, slots=True)
class Side:
    """Filters naming one side of a comparison; "" matches anything."""

    accelerator: str = ""
    framework: str = ""
    version: str = ""
    strategy: str = ""
    precision: str = ""

    def expr(self) -> pl.Expr:
        conds = [pl.lit(True)]
        if self.accelerator:
            conds.append(pl.col("accelerator_id") == self.accelerator)
        for column, value in (("framework", self.framework), ("framework_version", self.version), ("strategy", self.strategy), ("precision", self.precision)):
            if value:
                conds.append(_eq(column, value))
        return pl.all_horizontal(conds)


def _side_label(side: Side) -> str:
    return " · ".join(v for v in (side.accelerator, side.framework, side.version, side.strategy, side.precision) if v) or "any"


@dataclass(frozen=True, slots=True)
class Preset:
    models: tuple[str, ...]
    metric: str
    base: Side | None
    cand: Side | None
    stored: Callable[[], pl.Expr]
    source: str | None = None


PRESETS: dict[str, Preset] = {
    "nemo": Preset(
        ("llama2-7b", "llama2-13b", "llama2-70b"), TOKEN_METRIC,
        Side("a100-80gb", "nemo"), Side("h200", "nemo"),
        lambda: pl.col("accelerator_id") == "h200", "nv_blog_nemo_h200_2023",
    ),
    "fsdp": Preset(("gpt3-20b",), TOKEN_METRIC, None, None, lambda: pl.col("strategy") == "fsdp"),
    "rlhf": Preset(
        ("gpt3-2b", "llama2-7b", "llama2-13b", "llama2-70b"), TOKEN_METRIC, None, None,
        lambda: pl.col("workload") == "rlhf",
    ),
}
PRESET_TITLES = {
    "nemo": "NeMo on H200 vs A100, Llama 2 7B / 13B / 70B (seq 4096, global batch 128)",
    "fsdp": "FSDP vs 3D parallelism, NeMo GPT-20B on 8-128 H100 (stored ratios)",
    "rlhf": "RLHF with vs without TensorRT-LLM in the loop, NeMo on H100 (stored ratios)",
    "custom": "Custom comparison",
}
CAVEAT_COLUMNS = (("seq_len", "seq len"), ("precision", "precision"), ("global_batch", "global batch"),
                  ("n_devices", "device count"), ("framework_version", "framework version"))

SPEEDUP_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String(), "speedup (x)": pl.Float64(),
    "baseline value": pl.Float64(), "candidate value": pl.Float64(), "metric": pl.String(),
    "baseline TFLOPS/device published": pl.Float64(), "baseline TFLOPS/device recomputed": pl.Float64(),
    "candidate TFLOPS/device published": pl.Float64(), "candidate TFLOPS/device recomputed": pl.Float64(),
    "baseline": pl.String(), "candidate": pl.String(),
    "baseline devices": pl.Int64(), "candidate devices": pl.Int64(), "kind": pl.String(),
    "caveats": pl.String(), "source": pl.String(), "baseline result id": pl.Int64(), "candidate result id": pl.Int64(),
}


def caveat_list(table_frame: pl.DataFrame) -> list[str]:
    """The distinct like-for-like warnings of a speedups table (stored-ratio notes left out)."""
    items = {c.strip() for cell in table_frame["caveats"].drop_nulls().to_list() for c in cell.split(";")}
    return sorted(c for c in items if c and "published ratio" not in c)


def _resolved(state: SpeedupView) -> Preset:
    if state.preset != "custom":
        return PRESETS[state.preset]
    cand = state.cand_side()
    return Preset(state.models, state.metric, state.base_side(), cand,
                  lambda: pl.col("accelerator_id") == cand.accelerator if cand.accelerator else pl.lit(True))


def _label(row: Mapping[str, Any]) -> str:
    version = row.get("framework_version") or ""
    framework = None if version.lower().startswith(str(row.get("framework") or "-").lower()) else row.get("framework")
    parts = [row.get("accelerator_id"), framework, version, row.get("strategy"), row.get("precision")]
    return " · ".join(str(p) for p in parts if p not in (None, "", "unstated"))


def _caveats(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    diffs = [f"{label} differs ({base.get(c)} vs {cand.get(c)})" for c, label in CAVEAT_COLUMNS if base.get(c) != cand.get(c)]
    return "; ".join(diffs)


_TFLOPS_KEYS = ("source_id", "accelerator_id", "model_id", "n_devices", "framework_version", "seq_len")


def _published_tflops_index(rows: pl.DataFrame) -> dict[tuple[Any, ...], float]:
    """The first published TFLOPS/device per (source, accelerator, model, devices, version, seq len)."""
    index: dict[tuple[Any, ...], float] = {}
    for *key, value in rows.filter(pl.col("metric") == TFLOPS_METRIC).select(*_TFLOPS_KEYS, "value").iter_rows():
        index.setdefault(tuple(key), float(value))
    return index


def _pair_row(published: Mapping[tuple[Any, ...], float], models: Mapping[str, dict[str, Any]], base: dict[str, Any],
              cand: dict[str, Any], formula: str) -> dict[str, Any]:
    ratio, why = _safe(lambda: metrics.speedup(float(cand["value"]), float(base["value"])))
    tf = (lambda r: _recomputed_tflops(r, models, formula)[0]) if base["metric"] == TOKEN_METRIC else (lambda r: None)
    tflops = lambda r: published.get(tuple(r[k] for k in _TFLOPS_KEYS))  # noqa: E731
    return {
        "model": cand["model_id"], "kind": "computed from two stored results",
        "baseline": _label(base), "candidate": _label(cand),
        "baseline devices": base["n_devices"], "candidate devices": cand["n_devices"], "metric": cand["metric"],
        "baseline value": base["value"], "candidate value": cand["value"], "speedup (x)": ratio,
        "baseline TFLOPS/device published": tflops(base), "baseline TFLOPS/device recomputed": tf(base),
        "candidate TFLOPS/device published": tflops(cand), "candidate TFLOPS/device recomputed": tf(cand),
        "caveats": "; ".join(x for x in (_caveats(base, cand), why) if x),
        "source": cand["source_id"] if cand["source_id"] == base["source_id"] else f"{base['source_id']}; {cand['source_id']}",
        "baseline result id": base["id"], "candidate result id": cand["id"],
    }


def _computed_pairs(rows: pl.DataFrame, preset: Preset, models: Mapping[str, dict[str, Any]], formula: str) -> list[dict[str, Any]]:
    """Each candidate row against the first baseline row of its model with the same device count (else the
    first of its model). Baselines and published TFLOPS are indexed once: a store can hold thousands of pairs."""
    if preset.base is None or preset.cand is None:
        return []
    on_metric = rows.filter(pl.col("metric") == preset.metric)
    if preset.source:
        on_metric = on_metric.filter(pl.col("source_id") == preset.source)
    base_rows, cand_rows = on_metric.filter(preset.base.expr()), on_metric.filter(preset.cand.expr())
    first_of_model: dict[Any, dict[str, Any]] = {}
    first_of_model_and_n: dict[tuple[Any, Any], dict[str, Any]] = {}
    for base in base_rows.to_dicts():
        if base["model_id"] is not None:  # a null model matches no candidate (== on null is null)
            first_of_model.setdefault(base["model_id"], base)
            if base["n_devices"] is not None:
                first_of_model_and_n.setdefault((base["model_id"], base["n_devices"]), base)
    published = _published_tflops_index(rows)
    out = []
    for cand in cand_rows.to_dicts():
        base = first_of_model_and_n.get((cand["model_id"], cand["n_devices"])) or first_of_model.get(cand["model_id"])
        if base is not None:
            out.append(_pair_row(published, models, base, cand, formula))
    return out


def _stored_ratios(rows: pl.DataFrame, preset: Preset) -> list[dict[str, Any]]:
    stored = rows.filter(pl.col("metric") == "relative_throughput", preset.stored().fill_null(False))
    if preset.source:
        stored = stored.filter(pl.col("source_id") == preset.source)
    return [
        {
            "model": r["model_id"], "kind": "stored ratio (published)",
            "baseline": r["baseline"] or "named in the source", "candidate": _label(r),
            "candidate devices": r["n_devices"], "metric": "relative_throughput", "speedup (x)": r["value"],
            "caveats": "a published ratio: no underlying results are stored, so it is shown as stored, not recomputed",
            "source": r["source_id"], "candidate result id": r["id"],
        }
        for r in stored.to_dicts()
    ]


def speedup_table(state: SpeedupView, engine: Engine) -> pl.DataFrame:
    """Candidate vs baseline for each model: speedup = candidate / baseline, TFLOPS published and recomputed."""
    preset = _resolved(state)
    rows = store.results(engine, model_ids=list(preset.models) if preset.models else None)
    models = _rows_by_id(store.models(engine))
    records = _computed_pairs(rows, preset, models, state.formula) + _stored_ratios(rows, preset)
    frame = pl.DataFrame(records, schema=SPEEDUP_SCHEMA, strict=False) if records else pl.DataFrame(schema=SPEEDUP_SCHEMA)
    order = {m: i for i, m in enumerate(preset.models)}
    return frame.with_columns(pl.col("model").replace_strict(order, default=len(order)).alias("_o")).sort(
        ["kind", "_o", "candidate devices"], nulls_last=True).drop("_o")


# ---------------------------------------------------------------------------------------- accelerators

ACCEL_SCHEMA: dict[str, pl.DataType] = {
    "accelerator": pl.String(), "accelerator name": pl.String(), "model": pl.String(), "devices": pl.Int64(),
    "precision": pl.String(), "framework": pl.String(), "metric": pl.String(),
    "value": pl.Float64(), "unit": pl.String(), "normalized": pl.Float64(), "normalized unit": pl.String(),
    "peak TFLOPS used": pl.Float64(), "measured matmul TFLOPS": pl.Float64(), "MFU vs measured peak": pl.Float64(),
    "why": pl.String(), "source": pl.String(), "result id": pl.Int64(),
}


def _normalized(row: Mapping[str, Any], acc: Mapping[str, Any] | None, state: AcceleratorView,
                models: Mapping[str, dict[str, Any]]) -> tuple[float | None, str, float | None, str]:
    """(normalized value, its unit, peak used, why-not) for one result row."""
    value = float(row["value"])
    unit = METRIC_LABELS[state.metric]
    if acc is None:
        return None, unit, None, "accelerator not in the catalog"
    per_pkg = int(acc.get("devices_per_package") or 1) if state.per_package else 1
    if state.norm == "device":
        return value * per_pkg, unit.replace("device", "package") if per_pkg > 1 or state.per_package else unit, None, ""
    if state.norm == "watt":
        v, why = _safe(lambda: metrics.per_watt(value * per_pkg, float(acc.get("tdp_w") or 0)))
        return v, f"{unit.split('/device')[0]} per W of TDP", None, why and f"no TDP in the catalog ({why})"
    if state.norm == "dollar":
        v, why = _safe(lambda: metrics.per_dollar_hour(value, state.usd_per_hour))
        return v, f"{unit.split('/device')[0]}/device per $/h", None, why
    precision = row.get("precision") or "unstated"
    note = "" if precision not in ("unstated", "") else "precision not stated: bf16 assumed; "
    try:
        peak = metrics.peak_tflops(acc, "bf16" if note else precision)
    except InvalidInput as exc:
        return None, "MFU (fraction)", None, str(exc)
    tflops = value if state.metric == TFLOPS_METRIC else _recomputed_tflops(row, models, state.formula)[0]
    if tflops is None:
        return None, "MFU (fraction)", peak.tflops, note + _recomputed_tflops(row, models, state.formula)[1]
    v, why = _safe(lambda: metrics.mfu(tflops, peak.tflops))
    return v, "MFU (fraction)", peak.tflops, (note + why + (f"; {peak.note}" if peak.note else "")).strip("; ")


def _measured_peaks(engine: Engine) -> dict[tuple[str, str], float]:
    """The highest matmul TFLOPS the micro-benchmark measured, per (accelerator, precision)."""
    rows = store.results(engine, metric="matmul_tflops")
    best = rows.group_by("accelerator_id", "precision").agg(pl.col("value").max())
    return {(str(a), str(p)): float(v) for a, p, v in best.iter_rows() if a is not None and v}


def _vs_measured(row: Mapping[str, Any], mfu: float | None, peak: float | None,
                 measured: Mapping[tuple[str, str], float]) -> tuple[float | None, float | None]:
    """(measured matmul peak, MFU against it) for an MFU row: model TFLOPS / what this machine really reached."""
    precision = row.get("precision") if row.get("precision") not in (None, "", "unstated") else "bf16"
    achievable = measured.get((str(row["accelerator_id"]), str(precision)))
    if mfu is None or peak is None or achievable is None:
        return achievable, None
    return achievable, _safe(lambda: metrics.mfu(mfu * peak, achievable))[0]


def accelerator_table(state: AcceleratorView, engine: Engine) -> pl.DataFrame:
    rows = store.results(engine, metric=state.metric, model_ids=list(state.models) or None)
    model_rows, acc_rows = store.catalog(engine)
    accs, models = _rows_by_id(acc_rows), _rows_by_id(model_rows)
    measured = _measured_peaks(engine) if state.norm == "mfu" else {}
    out = []
    for r in rows.to_dicts():
        norm, norm_unit, peak, why = _normalized(r, accs.get(str(r["accelerator_id"])), state, models)
        achievable, vs_measured = _vs_measured(r, norm, peak, measured) if state.norm == "mfu" else (None, None)
        out.append({
            "accelerator": r["accelerator_id"], "accelerator name": r["accelerator_name"] or r["accelerator_as_printed"],
            "model": r["model_id"], "devices": r["n_devices"], "precision": r["precision"], "framework": r["framework"],
            "metric": r["metric"], "value": r["value"], "unit": r["unit"], "normalized": norm,
            "normalized unit": norm_unit, "peak TFLOPS used": peak, "measured matmul TFLOPS": achievable,
            "MFU vs measured peak": vs_measured, "why": why, "source": r["source_id"], "result id": r["id"],
        })
    frame = pl.DataFrame(out, schema=ACCEL_SCHEMA, strict=False) if out else pl.DataFrame(schema=ACCEL_SCHEMA)
    return frame.sort(["model", "normalized"], descending=[False, True], nulls_last=True)


# --------------------------------------------------------------------------------------------- scaling

SCALING_SCHEMA: dict[str, pl.DataType] = {
    "series": pl.String(), "model": pl.String(), "accelerator": pl.String(), "devices": pl.Int64(),
    "metric": pl.String(), "value": pl.Float64(), "unit": pl.String(),
    "throughput (tokens/s, all devices)": pl.Float64(), "ideal linear (tokens/s)": pl.Float64(),
    "scaling efficiency": pl.Float64(), "kind": pl.String(), "baseline": pl.String(), "note": pl.String(),
    "source": pl.String(), "result id": pl.Int64(),
}
SCALING_METRICS = ("tokens_per_s_per_device", "tokens_per_s", "relative_throughput", "scaling_efficiency")


_SERIES_COLUMNS = ("source_id", "model_id", "accelerator_id", "framework_version", "precision", "seq_len",
                   "global_batch", "metric")
_RECORD_COLUMNS = ("n_devices", "value", "unit", "id")
_SCALING_INPUTS = (*_SERIES_COLUMNS, *_RECORD_COLUMNS, "baseline", "workload", "strategy", "note")


def _series_key(r: Mapping[str, Any]) -> str:
    parts = (r[c] for c in _SERIES_COLUMNS)
    return " · ".join(str(p) for p in parts if p not in (None, ""))


def _scaling_rows(rows: pl.DataFrame) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    throughput = rows.filter(pl.col("metric").is_in([TOKEN_METRIC, "tokens_per_s"]), pl.col("n_devices").is_not_null())
    groups: dict[str, list[dict[str, Any]]] = {}
    throughput = throughput.select(*_SERIES_COLUMNS, *_RECORD_COLUMNS)  # to_dicts costs per column
    for r in throughput.to_dicts():
        groups.setdefault(_series_key(r), []).append(r)
    for key, members in groups.items():
        if len({m["n_devices"] for m in members}) < 2:
            continue
        members.sort(key=lambda m: m["n_devices"])
        base = members[0]
        total = (lambda m: float(m["value"]) * m["n_devices"]) if base["metric"] == TOKEN_METRIC else (lambda m: float(m["value"]))
        for m in members:
            eff, why = _safe(lambda: metrics.scaling_efficiency(total(m), m["n_devices"], total(base), base["n_devices"]))
            out.append(_scaling_record(key, m, total(m), total(base) * m["n_devices"] / base["n_devices"], eff,
                                       "computed from stored throughputs", f"{base['n_devices']} devices in this series", why))
    return out


def _scaling_record(series: str, r: Mapping[str, Any], thr: float | None, ideal: float | None, eff: float | None,
                    kind: str, baseline: str, note: str) -> dict[str, Any]:
    return {"series": series, "model": r["model_id"], "accelerator": r["accelerator_id"], "devices": r["n_devices"],
            "metric": r["metric"], "value": r["value"], "unit": r["unit"], "throughput (tokens/s, all devices)": thr,
            "ideal linear (tokens/s)": ideal, "scaling efficiency": eff, "kind": kind, "baseline": baseline,
            "note": note, "source": r["source_id"], "result id": r["id"]}


def _stored_scaling(rows: pl.DataFrame, sensitivity: bool) -> list[dict[str, Any]]:
    rel = rows.filter(pl.col("metric").is_in(["relative_throughput", "scaling_efficiency"])).select(
        *_SERIES_COLUMNS, *_RECORD_COLUMNS, "baseline", "workload", "strategy", "note")
    out = []
    for r in rel.to_dicts():
        is_scaling = r["metric"] == "scaling_efficiency" or "node" in (r["baseline"] or "") or " 1 CS-2" in f" {r['baseline'] or ''}"
        if is_scaling == sensitivity or r["workload"] == "rlhf" or r["strategy"] == "fsdp" or r["accelerator_id"] == "h200":
            continue
        eff = r["value"] if r["metric"] == "scaling_efficiency" else None
        out.append(_scaling_record(f"{r['source_id']} · {r['model_id']} · {r['accelerator_id']}", r, None, None, eff,
                                   "stored (published)", r["baseline"] or "not stated in the source", (r["note"] or "")[:200]))
    return out


def scaling_table(state: ScalingView, engine: Engine) -> pl.DataFrame:
    rows = store.results(engine, metric=list(SCALING_METRICS), model_ids=list(state.models) or None,
                         accelerator_ids=list(state.accelerators) or None, columns=_SCALING_INPUTS)
    sensitivity = state.section == "sensitivity"
    records = ([] if sensitivity else _scaling_rows(rows)) + _stored_scaling(rows, sensitivity)
    frame = pl.DataFrame(records, schema=SCALING_SCHEMA, strict=False) if records else pl.DataFrame(schema=SCALING_SCHEMA)
    return frame.sort(["kind", "series", "devices"], nulls_last=True)


# --------------------------------------------------------------------------------------- time to train

TTT_SCHEMA: dict[str, pl.DataType] = {
    "devices": pl.Int64(), "time (s)": pl.Float64(), "time (h)": pl.Float64(), "time (days)": pl.Float64(),
    "cost (USD)": pl.Float64(), "tokens/s/device": pl.Float64(), "basis": pl.String(), "chosen": pl.Boolean(),
}


def measured_row(state: TimeToTrainView, engine: Engine) -> dict[str, Any] | None:
    """The measured tokens/s/device row the projection uses: `r` when given, else the first for model+accelerator."""
    rows = store.results(engine, metric=TOKEN_METRIC)
    chosen = rows.filter(pl.col("id") == state.row) if state.row else rows.filter(
        pl.col("model_id") == state.model, pl.col("accelerator_id") == state.accelerator)
    return chosen.row(0, named=True) if chosen.height else None


def _throughput_per_device(state: TimeToTrainView, engine: Engine) -> tuple[float, str]:
    """(tokens/s/device, basis sentence) for the view's mode."""
    if state.mode == "measured":
        row = measured_row(state, engine)
        if row is None:
            raise InvalidQuery(f"no tokens/s/device row is stored for {state.model} on {state.accelerator}; choose another pair or use mode=peak")
        return float(row["value"]), f"measured {row['value']:g} tokens/s/device (result {row['id']}, {row['source_id']})"
    model_rows, acc_rows = store.catalog(engine)
    model, acc = _rows_by_id(model_rows).get(state.model), _rows_by_id(acc_rows).get(state.accelerator)
    if model is None or acc is None:
        missing = state.model if model is None else state.accelerator
        raise InvalidQuery(f"{missing!r} is not in the catalog; pick a model and accelerator from the lists")
    fpt = flops.flops_per_token(flops.ModelShape.from_row(model), int(model.get("seq_len") or 2048), state.formula)
    peak = metrics.peak_tflops(acc, state.precision)
    seconds = metrics.time_to_train_from_peak_s(1.0, fpt, 1, peak.tflops, state.efficiency)
    return 1.0 / seconds, f"{state.efficiency:.0%} of {peak.describe()}; {fpt / 1e9:.1f} GFLOP/token ({state.formula})"


def time_to_train_table(state: TimeToTrainView, engine: Engine) -> pl.DataFrame:
    """Time (and cost) to train `tokens` at the chosen device count and a sweep around it."""
    tps, basis = _throughput_per_device(state, engine)
    counts = sorted({max(1, state.devices // 4), max(1, state.devices // 2), state.devices, state.devices * 2, state.devices * 4})
    out = []
    for n in counts:
        seconds = metrics.time_to_train_s(state.tokens, n, tps)
        cost = metrics.cost_to_train_usd(seconds, n, state.usd_per_hour) if state.usd_per_hour > 0 else None
        out.append({"devices": n, "time (s)": seconds, "time (h)": seconds / metrics.SECONDS_PER_HOUR,
                    "time (days)": seconds / metrics.SECONDS_PER_DAY, "cost (USD)": cost, "tokens/s/device": tps,
                    "basis": basis, "chosen": n == state.devices})
    return pl.DataFrame(out, schema=TTT_SCHEMA, strict=False)


# ------------------------------------------------------------------------------------------------ runs


def runs_table(state: RunsView, engine: Engine) -> pl.DataFrame:
    """The run list, or (with run=ID) the run's steps labelled warm-up / steady / stall."""
    if not state.run:
        return store.runs(engine)
    steps = run_steps(state, engine, state.run)
    return steps


def run_steps(state: RunsView, engine: Engine, run_id: int) -> pl.DataFrame:
    if store.run(engine, run_id) is None:
        raise InvalidQuery(f"there is no run {run_id}; the Runs page lists the ingested runs")
    frame = store.steps(engine, run_id)
    return frame.with_columns(steady.label_steps(frame, state.rule()).alias("phase"))


def run_summary(state: RunsView, engine: Engine, run_id: int) -> steady.SteadyState:
    return steady.steady_state(store.steps(engine, run_id), state.rule())


def config_diff(engine: Engine, a: int, b: int) -> pl.DataFrame:
    """Config keys whose values differ between two runs (and the steady-state summary figures)."""
    ra, rb = store.run(engine, a), store.run(engine, b)
    if ra is None or rb is None:
        raise InvalidQuery(f"there is no run {a if ra is None else b}; the Runs page lists the ingested runs")
    left = {**{f"config.{k}": v for k, v in ra.config.items()}, **{f"summary.{k}": v for k, v in (ra.summary or {}).items()}}
    right = {**{f"config.{k}": v for k, v in rb.config.items()}, **{f"summary.{k}": v for k, v in (rb.summary or {}).items()}}
    keys = sorted(set(left) | set(right))
    rows = [{"key": k, f"run {a}": _text(left.get(k)), f"run {b}": _text(right.get(k)), "differs": left.get(k) != right.get(k)} for k in keys]
    return pl.DataFrame(rows, schema={"key": pl.String(), f"run {a}": pl.String(), f"run {b}": pl.String(), "differs": pl.Boolean()})


def _text(v: Any) -> str | None:
    return None if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))


def nearest_claims(engine: Engine, run_id: int) -> pl.DataFrame:
    """Published tokens/s/device and TFLOPS rows for the run's model and accelerator."""
    r = store.run(engine, run_id)
    if r is None:
        return store.results(engine, model_ids=[])
    model, acc = r.config.get("model"), r.config.get("accelerator")
    rows = store.results(engine, metric=[TOKEN_METRIC, TFLOPS_METRIC, "mfu"], model_ids=[str(model)], accelerator_ids=[str(acc)])
    return rows.filter(pl.col("run_id").is_null()).select("id", "source_id", "n_devices", "precision", "framework", "metric", "value", "unit")


# ----------------------------------------------------------------------------------------------- audit


def audit_rule(state: AuditView) -> audit.AuditRule:
    return audit.AuditRule(tolerance=state.tolerance, formula=state.formula)


def audit_table(state: AuditView, engine: Engine) -> pl.DataFrame:
    """perfledger.calc.audit over every stored claim, then the page's filters; the CLI's `audit` is this."""
    rule = audit_rule(state)
    rows = store.results(engine, metric=[audit.CLAIM_METRIC, audit.THROUGHPUT_METRIC], columns=audit.INPUT_COLUMNS)
    frame = audit.audit_claims(rows, *store.catalog(engine), rule)
    if state.models:
        frame = frame.filter(pl.col("model_id").is_in(list(state.models)))
    if state.sources:
        frame = frame.filter(pl.col("source_id").is_in(list(state.sources)))
    if state.verdicts:
        frame = frame.filter(pl.col("verdict").is_in(list(state.verdicts)))
    return frame.sort(["verdict", "source_id", "model_id", "n_devices"], nulls_last=True, maintain_order=True)


# --------------------------------------------------------------------------------------------- sources


def sources_table(state: SourcesView, engine: Engine) -> pl.DataFrame:
    if state.source:
        rows = store.results(engine, source_ids=[state.source])
        return rows.select("id", "model_id", "accelerator_id", "n_devices", "framework", "metric", "value", "unit", "evidence", "locator")
    frame = store.sources(engine)
    if state.kinds:
        frame = frame.filter(pl.col("kind").is_in(list(state.kinds)))
    return frame.select("id", "kind", "date", "title", "publisher", "url", "evidence", "n_results")


_TABLES: dict[str, Callable[[Any, Engine], pl.DataFrame]] = {
    "overview": overview_table,
    "speedups": speedup_table,
    "accelerators": accelerator_table,
    "scaling": scaling_table,
    "time-to-train": time_to_train_table,
    "runs": runs_table,
    "audit": audit_table,
    "sources": sources_table,
}


def is_empty(engine: Engine) -> bool:
    """True when the store has no tables or no result rows and no runs: the pages say to run init."""
    return not store.has_data(engine)


__all__ = [
    "PAGE_STATES", "SLUGS", "HEADLINES", "state_from_query", "table", "export", "render", "link", "formula_of",
    "is_empty",
]


def input_rows(table_frame: pl.DataFrame, engine: Engine) -> pl.DataFrame:
    """The stored result rows a page's table was computed from (every '... result id' column)."""
    ids = sorted({int(i) for c in table_frame.columns if c.endswith("result id") for i in table_frame[c].drop_nulls().to_list()})
    rows = store.results(engine).filter(pl.col("id").is_in(ids))
    return rows.select("id", "source_id", "model_id", "accelerator_id", "n_devices", "framework", "framework_version",
                       "precision", "seq_len", "global_batch", "metric", "value", "unit", "evidence", "locator")


def rows_of_kind(table_frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    """Rows whose `kind` starts with `prefix` ("computed" or "stored")."""
    return table_frame.filter(pl.col("kind").str.starts_with(prefix))


def verdict_counts(table_frame: pl.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in table_frame.group_by("verdict").len().iter_rows()}


def source_row(sources_frame: pl.DataFrame, source_id: str) -> dict[str, Any]:
    return sources_frame.filter(pl.col("id") == source_id).row(0, named=True)


def chosen_row(ttt_frame: pl.DataFrame) -> dict[str, Any]:
    """The time-to-train row for the device count the view chose."""
    return ttt_frame.filter(pl.col("chosen")).row(0, named=True)


def ids_frame(ids: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"result id": ids}, schema={"result id": pl.Int64()})
