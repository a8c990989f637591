"""Pairing arithmetic: which baseline a candidate is compared with, and a scaling series against its smallest
device count; pure functions over result rows (mappings with model_id, n_devices, value, metric), and a series'
computed rows summarised per device count (a frame).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import polars as pl

from perfledger.calc import metrics
from perfledger.calc.normalise import safe

Row = TypeVar("Row", bound=Mapping[str, Any])


def speedup_pairs(baselines: Iterable[Row], candidates: Iterable[Row]) -> list[tuple[Row, Row]]:
    """(baseline, candidate) for each candidate: the first baseline of its model with the same device count,
    else the first of its model; a candidate whose model has no baseline is left out. A null model matches
    nothing. Baselines are indexed once: a store can hold thousands of pairs."""
    first_of_model: dict[Any, Row] = {}
    first_of_model_and_n: dict[tuple[Any, Any], Row] = {}
    for base in baselines:
        if base["model_id"] is not None:
            first_of_model.setdefault(base["model_id"], base)
            if base["n_devices"] is not None:
                first_of_model_and_n.setdefault((base["model_id"], base["n_devices"]), base)
    out = []
    for cand in candidates:
        match = first_of_model_and_n.get((cand["model_id"], cand["n_devices"])) or first_of_model.get(cand["model_id"])
        if match is not None:
            out.append((match, cand))
    return out


def first_by_key(rows: Iterable[Sequence[Any]]) -> dict[tuple[Any, ...], float]:
    """The first value per key, for rows given as (*key, value)."""
    index: dict[tuple[Any, ...], float] = {}
    for *key, value in rows:
        index.setdefault(tuple(key), float(value))
    return index


@dataclass(frozen=True, slots=True)
class ScalingPoint:
    """One member of a scaling series against the series' smallest device count."""

    series: str
    row: Mapping[str, Any]
    throughput: float  # tokens/s, all devices
    ideal: float  # base throughput x devices / base devices
    efficiency: float | None
    why: str
    base_devices: int
    scaling: str = ""  # "strong (global batch 256)", "weak (8 per device)" or "global batch not stated"


# A scaling series is one source's one model, workload, precision and strategy on one accelerator (and framework
# version and sequence length); its global batch decides weak or strong scaling (scaling_kind).
SERIES_COLUMNS = ("source_id", "model_id", "workload", "precision", "strategy", "accelerator_id",
                  "framework_version", "seq_len")


def is_scaling_claim(row: Mapping[str, Any]) -> bool:
    """A stored scaling_efficiency, or a relative throughput whose baseline is a smaller node or system count of
    the same setup (not another accelerator or software release)."""
    baseline = row.get("baseline") or ""
    return row["metric"] == "scaling_efficiency" or "node" in baseline or " 1 CS-2" in f" {baseline}"


def scaling_series(rows: Iterable[Mapping[str, Any]], series_of: Callable[[Mapping[str, Any]], str],
                   per_device_metric: str) -> list[ScalingPoint]:
    """Rows grouped into series (by `series_of`, then split by global batch unless it stays constant or grows
    with the device count); each series of two or more device counts is measured against its smallest. A
    per-device metric is multiplied by the device count to give the all-device throughput."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(series_of(r), []).append(r)
    out: list[ScalingPoint] = []
    for key, members in _by_batch(groups):
        if len({m["n_devices"] for m in members}) < 2:
            continue
        members.sort(key=lambda m: m["n_devices"])
        kind = scaling_kind(members)
        base = members[0]
        per_device = base["metric"] == per_device_metric
        base_total, base_n = total_throughput(base, per_device), base["n_devices"]
        for m in members:
            thr, n = total_throughput(m, per_device), m["n_devices"]
            eff, why = _efficiency(thr, n, base_total, base_n)
            out.append(ScalingPoint(key, m, thr, base_total * n / base_n, eff, why, base_n, kind))
    return out


def scaling_kind(members: Sequence[Mapping[str, Any]]) -> str:
    """Strong scaling when the global batch is the same at every device count, weak when it grows with the
    devices (the same batch per device); "" when neither (the caller splits such a series)."""
    batches = [m.get("global_batch") for m in members]
    if any(b is None for b in batches):
        return "global batch not stated"
    if len(set(batches)) == 1:
        return f"strong (global batch {batches[0]})"
    per_device = {b / m["n_devices"] for b, m in zip(batches, members, strict=True)}
    return f"weak ({per_device.pop():g} per device)" if len(per_device) == 1 else ""


def _by_batch(groups: dict[str, list[Mapping[str, Any]]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Each group as one series when it scales weakly or strongly; else one series per global batch."""
    out: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, members in groups.items():
        if scaling_kind(members):
            out.append((key, members))
            continue
        split: dict[Any, list[Mapping[str, Any]]] = {}
        for m in members:
            split.setdefault(m.get("global_batch"), []).append(m)
        out.extend((f"{key} · GBS {gbs}", part) for gbs, part in split.items())
    return out


def total_throughput(row: Mapping[str, Any], per_device: bool) -> float:
    """All-device throughput of a row: a per-device value times the device count."""
    return float(row["value"]) * row["n_devices"] if per_device else float(row["value"])


def _efficiency(throughput: float, devices: int, base_throughput: float, base_devices: int) -> tuple[float | None, str]:
    return safe(lambda: metrics.scaling_efficiency(throughput, devices, base_throughput, base_devices))


PER_DEVICE_METRICS = ("tokens_per_s_per_device", "model_tflops_per_device", "mfu")
SAME_FIGURE = ("model_id", "metric")  # what two rows must share to be set side by side at all


def same_figure_pairs(rows: Iterable[Row], first: str, second: str, *,
                      same_source: bool = True) -> list[tuple[Row, Row]]:
    """Every (row of `first`, row of `second`) accelerator on the same model and metric; a total (not per-device)
    metric also needs the same device count, and `same_source` the same source. Whether a pair is like for like
    (precision, devices, framework version, workload ...) is perfledger.calc.like_for_like's to say."""
    mine: dict[tuple[Any, ...], list[Row]] = {}
    theirs: list[Row] = []
    for r in rows:
        if any(r[c] is None for c in SAME_FIGURE) or ("value" in r and r["value"] is None):  # kept as printed
            continue
        if r["accelerator_id"] == first:
            mine.setdefault(_pair_key(r, same_source), []).append(r)
        elif r["accelerator_id"] == second:
            theirs.append(r)
    return [(a, b) for b in theirs for a in mine.get(_pair_key(b, same_source), [])]


def _pair_key(r: Mapping[str, Any], same_source: bool) -> tuple[Any, ...]:
    devices = None if r["metric"] in PER_DEVICE_METRICS else r["n_devices"]
    return (*(r[c] for c in SAME_FIGURE), devices, r["source_id"] if same_source else None)


@dataclass(frozen=True, slots=True)
class RatioSummary:
    """The median of a set of ratios and their spread (min, max), over `n` pairs."""

    n: int
    median: float
    low: float
    high: float


def ratio_summary(ratios: Iterable[float | None]) -> RatioSummary | None:
    """Median and spread of the finite ratios; None when there are none."""
    values = sorted(v for v in ratios if v is not None and math.isfinite(v))
    if not values:
        return None
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return RatioSummary(len(values), median, values[0], values[-1])


THROUGHPUT = "throughput (tokens/s, all devices)"


def points_by_devices(computed: pl.DataFrame) -> pl.DataFrame:
    """The scaling chart's points: one per series and device count, at the median of its computed rows'
    throughput, with their lowest and highest, the median ideal and efficiency and how many rows they are (a series
    measured 500 times at 64 devices is one point and its spread, not 500 dots drawn on top of each other)."""
    ids = pl.col("result id").sort()
    return (computed.filter(pl.col(THROUGHPUT).is_not_null())
            .group_by("series", "accelerator", "devices", maintain_order=True)
            .agg(pl.col(THROUGHPUT).median(), pl.col(THROUGHPUT).min().alias("lowest (tokens/s)"),
                 pl.col(THROUGHPUT).max().alias("highest (tokens/s)"), pl.col("ideal linear (tokens/s)").median(),
                 pl.col("scaling efficiency").median(), pl.len().alias("results"),
                 pl.col("source").unique(maintain_order=True).str.join(", "),
                 pl.when(pl.len() <= 3).then(ids.cast(pl.String).str.join(", "))
                 .otherwise(pl.format("{} … {} ({} rows)", ids.first(), ids.last(), pl.len())).alias("result id")))


# ------------------------------------------------------------------------------ what a claim is checked against
# A claim's configuration: every column that changes what a figure measures. A model or accelerator not in the
# catalog is told apart by its printed name ("32B model" is not "64B model"); `attributes` holds every further
# column a claims file carried (activation checkpointing, slice layout ...), as one canonical JSON text.
CONFIG_COLUMNS = ("_model", "_accelerator", "n_devices", "precision", "seq_len", "global_batch", "micro_batch",
                  "grad_accum", "tp", "pp", "dp", "ep", "cp", "sparsity", "workload", "strategy",
                  "framework_version", "attributes")
STEP_TIME_METRIC = "step_time_s"
RL_WORKLOAD = "rlhf"  # RL post-training: its step throughput is its own quantity, never a training rate
DERIVED_THROUGHPUT = "tokens_per_s_per_device"


def with_config_keys(results: pl.DataFrame) -> pl.DataFrame:
    """The rows with _model and _accelerator (the catalog id, else "as printed: NAME"), _derived (False) and the
    rows' own throughput where they print only step time: global batch x sequence length / step time / devices,
    as a tokens/s/device row with the step-time row's id and _derived True (labelled derived wherever shown).

    A printed row that prints its tokens/s/device is not given a derived one (its own figure comes first; the two
    are checked against each other by calc.audit_relations), and an RL post-training row never is: its step
    generates, scores and trains, so batch x sequence / step time is no training throughput."""
    if "_model" in results.columns:
        return results
    frame = results.with_columns(_name_key(results, "model"), _name_key(results, "accelerator"), _derived=pl.lit(False))
    if "locator" not in frame.columns:
        frame = frame.with_columns(locator=pl.lit(None, dtype=pl.String))
    needed = ("global_batch", "seq_len", "n_devices")
    if not all(c in frame.columns for c in needed):
        return frame
    value = pl.col("value").cast(pl.Float64)
    steps = frame.filter((pl.col("metric") == STEP_TIME_METRIC) & (value > 0) & value.is_finite()
                         & pl.all_horizontal(pl.col(c).is_not_null() & (pl.col(c) > 0) for c in needed))
    if "workload" in frame.columns:
        steps = steps.filter(pl.col("workload").is_null() | (pl.col("workload") != RL_WORKLOAD))
    printed_row = ["source_id", "locator", *config_keys(frame, with_source=False)] if "source_id" in frame.columns \
        else ["locator", *config_keys(frame, with_source=False)]
    printed = frame.filter(pl.col("metric") == DERIVED_THROUGHPUT).select(printed_row).unique()
    steps = steps.join(printed, on=printed_row, how="anti", nulls_equal=True)
    derived = steps.with_columns(
        metric=pl.lit(DERIVED_THROUGHPUT), _derived=pl.lit(True),
        value=(pl.col("global_batch") * pl.col("seq_len") / value / pl.col("n_devices")).cast(frame.schema["value"]))
    return pl.concat([frame, derived.select(frame.columns)]) if derived.height else frame


def _name_key(results: pl.DataFrame, kind: str) -> pl.Expr:
    key = pl.col(f"{kind}_id") if f"{kind}_id" in results.columns else pl.lit(None, dtype=pl.String)
    if f"{kind}_as_printed" in results.columns:
        key = pl.coalesce(key, pl.lit("as printed: ") + pl.col(f"{kind}_as_printed"))
    return key.alias(f"_{kind}")


def config_keys(results: pl.DataFrame, *, with_source: bool = True) -> list[str]:
    """The configuration columns present in `results` (source first when pairing within one source)."""
    present = [c for c in CONFIG_COLUMNS if c in results.columns]
    return ["source_id", *present] if with_source else present


def describe_input(result_id: Any, source_id: Any, locator: Any, derived: bool = False) -> str:
    """How a verdict names one figure it used: "result 12 (nvidia_blog, Table 2)"; "derived from" for a
    throughput computed from the row's step time, batch, sequence length and devices.

    >>> describe_input(12, "nv", "Table 2"), describe_input(3, "zoo", None, True)
    ('result 12 (nv, Table 2)', 'result 3 (zoo; tokens/s derived from its step time, global batch, sequence length and devices)')
    """
    where = f"{source_id}, {locator}" if locator else f"{source_id}"
    if derived:
        where += "; tokens/s derived from its step time, global batch, sequence length and devices"
    return f"result {result_id} ({where})"


_INPUT = re.compile(r"result (-?\d+) \(([^,;()]+)")


def input_refs(inputs: str | None) -> list[tuple[int, str]]:
    """The (result id, source id) of each figure an `inputs` text names (describe_input's, "; "-joined).

    >>> input_refs("result 12 (nv, Table 2); result 3 (zoo; tokens/s derived from its step time)")
    [(12, 'nv'), (3, 'zoo')]
    """
    return [(int(rid), src) for rid, src in _INPUT.findall(inputs or "")]
