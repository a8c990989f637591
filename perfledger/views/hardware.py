"""The Accelerators page's two hardware sections: the catalog (peaks, memory, power, what is stored for each
accelerator) and the head-to-head (every pair of stored results of two or more accelerators on the same model and
metric, each judged like for like or not by perfledger.calc.like_for_like)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import polars as pl

from perfledger.calc import like_for_like, metrics
from perfledger.calc.normalise import measured_precision, safe
from perfledger.calc.pairing import ratio_summary, same_figure_pairs
from perfledger.errors import InvalidInput
from perfledger.views._shared import frame_of

CATALOG_SCHEMA: dict[str, pl.DataType] = {
    "accelerator": pl.String(), "name": pl.String(), "vendor": pl.String(), "stored results": pl.Int64(),
    "what is stored": pl.String(), "bf16 TFLOPS": pl.Float64(), "fp16 TFLOPS": pl.Float64(),
    "fp8 TFLOPS": pl.Float64(), "tf32 TFLOPS": pl.Float64(), "fp32 TFLOPS": pl.Float64(),
    "memory (GB)": pl.Float64(), "bandwidth (TB/s)": pl.Float64(), "TDP (W)": pl.Float64(),
    "unit basis": pl.String(), "interconnect": pl.String(), "source": pl.String(),
}


def catalog_table(accelerators: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """One row per catalog accelerator: its dense peaks per precision, memory, bandwidth, TDP, interconnect and
    source, with how many result rows are stored for it and which model/metric pairs they are."""
    stored: dict[str, list[str]] = {}
    for acc, model, metric, n in (results.group_by("accelerator_id", "model_id", "metric", maintain_order=True).len()
                                  .sort("accelerator_id", "len", descending=[False, True], maintain_order=True)
                                  .iter_rows()):  # ties in stored order, the same on every render
        stored.setdefault(str(acc), []).append(f"{model or '?'} {metric} ×{n}")
    counts = {str(a): int(n) for a, n in results.group_by("accelerator_id").len().iter_rows()}
    out = [{
        "accelerator": a["id"], "name": a["name"], "vendor": a["vendor"], "stored results": counts.get(a["id"], 0),
        "what is stored": "; ".join(stored.get(a["id"], [])[:6]) or "—",
        "bf16 TFLOPS": a["bf16_tflops"], "fp16 TFLOPS": a["fp16_tflops"], "fp8 TFLOPS": a["fp8_tflops"],
        "tf32 TFLOPS": a["tf32_tflops"], "fp32 TFLOPS": a["fp32_tflops"], "memory (GB)": a["memory_gb"],
        "bandwidth (TB/s)": a["mem_bw_tbps"], "TDP (W)": a["tdp_w"], "unit basis": a["unit_basis"],
        "interconnect": a.get("interconnect"), "source": a["source_id"],
    } for a in accelerators.to_dicts()]
    return frame_of(out, CATALOG_SCHEMA).sort(["stored results", "accelerator"], descending=[True, False])


HEAD_SCHEMA: dict[str, pl.DataType] = {
    "pair": pl.String(), "model": pl.String(), "metric": pl.String(), "ratio (second / first)": pl.Float64(),
    "like for like": pl.String(), "ratio per peak": pl.Float64(), "ratio per watt": pl.Float64(), "first value": pl.Float64(),
    "second value": pl.Float64(), "workload": pl.String(), "precision": pl.String(), "first devices": pl.Int64(),
    "second devices": pl.Int64(), "caveats": pl.String(), "source": pl.String(), "first result id": pl.Int64(),
    "second result id": pl.Int64(),
}


def _peak(acc: Mapping[str, Any] | None, row: Mapping[str, Any]) -> float | None:
    if acc is None:
        return None
    try:
        return metrics.peak_tflops(acc, measured_precision(row)).tflops
    except InvalidInput:
        return None


def _scaled(ratio: float | None, first: float | None, second: float | None) -> float | None:
    """The ratio divided by second/first of a hardware figure (peak, TDP): the ratio per unit of that figure."""
    if ratio is None or not first or not second:
        return None
    return safe(lambda: ratio * first / second)[0]


PER_PEAK_METRICS = frozenset({"mfu", "hfu"})  # already a fraction of the peak: divided by it once, not twice


def per_peak_and_watt(metric: str, ratio: float | None, peaks: tuple[float | None, float | None],
                      watts: tuple[Any, Any]) -> tuple[float | None, float | None]:
    """The ratio per unit of peak and per watt. An MFU ratio is already per peak (it is the per-peak ratio); its
    per-watt ratio is that of the throughputs it stands for, MFU x peak.

    >>> per_peak_and_watt("mfu", 0.816, (989.0, 459.0), (700, None))
    (0.816, None)
    >>> round(per_peak_and_watt("tokens_per_s_per_device", 2.0, (312.0, 989.0), (400, 700))[0], 3)
    0.631
    """
    if metric in PER_PEAK_METRICS:
        throughput = _scaled(ratio, peaks[1], peaks[0])  # second's MFU x peak over first's
        return ratio, _scaled(throughput, watts[0], watts[1])
    return _scaled(ratio, peaks[0], peaks[1]), _scaled(ratio, watts[0], watts[1])


def _pair_row(a: Mapping[str, Any], b: Mapping[str, Any], accs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    ratio, why = safe(lambda: metrics.speedup(float(b["value"]), float(a["value"])))
    acc_a, acc_b = accs.get(str(a["accelerator_id"])), accs.get(str(b["accelerator_id"]))
    per_peak, per_watt = per_peak_and_watt(str(a["metric"]), ratio, (_peak(acc_a, a), _peak(acc_b, b)),
                                           ((acc_a or {}).get("tdp_w"), (acc_b or {}).get("tdp_w")))
    diffs = like_for_like.differences(a, b)
    caveats = [c for c in (why, like_for_like.details(diffs)) if c]
    if a["n_devices"] != b["n_devices"]:
        caveats.append("compared per device")
    if a["precision"] in like_for_like.UNSTATED or b["precision"] in like_for_like.UNSTATED:
        caveats.append("per peak at the bf16 peak where the precision is unstated")
    if a["source_id"] != b["source_id"]:
        caveats.append("different sources, compared on request")
    return {
        "pair": pair_name(a["accelerator_id"], b["accelerator_id"]), "model": a["model_id"], "metric": a["metric"],
        "like for like": like_for_like.verdict(diffs),
        "ratio (second / first)": ratio,
        "ratio per peak": per_peak, "ratio per watt": per_watt,
        "first value": a["value"], "second value": b["value"], "workload": _both(a, b, "workload"),
        "precision": _both(a, b, "precision"), "first devices": a["n_devices"], "second devices": b["n_devices"],
        "caveats": "; ".join(caveats),
        "source": a["source_id"] if a["source_id"] == b["source_id"] else f"{a['source_id']}; {b['source_id']}",
        "first result id": a["id"], "second result id": b["id"],
    }


def _both(a: Mapping[str, Any], b: Mapping[str, Any], column: str) -> Any:
    """The pair's value of `column`: one value when the two rows agree, else "first vs second"."""
    return a[column] if a[column] == b[column] else f"{a[column] or 'unstated'} vs {b[column] or 'unstated'}"


def head_to_head_table(results: pl.DataFrame, accelerators: pl.DataFrame, chosen: tuple[str, ...],
                       same_source: bool) -> pl.DataFrame:
    """Every pair of rows of each two chosen accelerators on the same model and metric (the same devices unless per
    device), as the second's value over the first's, per peak and per watt, and whether it is like for like."""
    accs = {str(r["id"]): r for r in accelerators.to_dicts()}
    rows = results.filter(pl.col("accelerator_id").is_in(list(chosen))).to_dicts()
    out = [_pair_row(a, b, accs) for first, second in combinations(chosen, 2)
           for a, b in same_figure_pairs(rows, first, second, same_source=same_source)]
    return frame_of(out, HEAD_SCHEMA).sort(["pair", "metric", "model", "first devices"], nulls_last=True)


def pair_name(first: Any, second: Any) -> str:
    """A pair as the table names it, in its ratio's order: the first (the ratio's denominator), then the second."""
    return f"{first} vs {second}"


def summaries(head: pl.DataFrame) -> list[str]:
    """One sentence per (pair, metric): the second over the first as a median, its spread, the number of pairs
    behind it and how many of them are like for like."""
    out = []
    for (pair, metric), group in head.group_by("pair", "metric", maintain_order=True):
        s = ratio_summary(group["ratio (second / first)"].to_list())
        peak, watt = ratio_summary(group["ratio per peak"].to_list()), ratio_summary(group["ratio per watt"].to_list())
        if s is None:
            continue
        first, second = str(pair).split(" vs ", 1)
        alike = int((group["like for like"] == "like for like").sum())
        extra = "".join(f"; {label} {x.median:.2f}x" for label, x in (("per peak", peak), ("per watt", watt)) if x)
        out.append(f"{pair} on {metric}: {second} / {first} median {s.median:.2f}x (range {s.low:.2f}–{s.high:.2f}x, "
                   f"{s.n} pair{'s' if s.n > 1 else ''}, {_alike(alike, group.height)}){extra}")
    return out


def _alike(alike: int, pairs: int) -> str:
    return "all like for like" if alike == pairs else "none like for like" if not alike else f"{alike} like for like"
