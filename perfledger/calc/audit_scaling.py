"""Audit of scaling claims: a published scaling efficiency (or a speedup over fewer nodes of the same setup)
recomputed from the throughput rows of its own series at different device counts.

    scaling_efficiency = (throughput_N / throughput_base) / (N / base)      (metrics.scaling_efficiency)
    relative_throughput = throughput_N / throughput_base                   (metrics.speedup)

The series and its default base (the smallest device count) are calc.pairing's, as on the Scaling page; a
baseline that names its device count ("1 node (8 GPUs)") is the default base instead. When the default base does
not reproduce the claim, every other device count of the series is tried and the one that does is named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from perfledger.calc import audit, audit_mfu, metrics, pairing
from perfledger.calc.audit_judge import DEFAULT, Candidate, Judgement, claim_row, judge
from perfledger.calc.normalise import safe

DEFAULT_RULE = audit.AuditRule()
CLAIM_METRICS = ("scaling_efficiency", "relative_throughput")
THROUGHPUT_METRICS = ("tokens_per_s_per_device", "tokens_per_s")
UNITS = {"scaling_efficiency": "fraction", "relative_throughput": "x"}
RELATIONS = {"scaling_efficiency": "scaling_efficiency = (throughput_N / throughput_base) / (N / base)",
             "relative_throughput": "relative_throughput = throughput_N / throughput_base"}
_STATED_BASE = re.compile(r"(\d[\d,]*)\s+(?:GPUs|devices|accelerators|HPUs|IPUs|RDUs)\b")


def stated_base(baseline: str | None) -> int | None:
    """The device count a baseline names, if it names one.

    >>> stated_base("same model on 1 node (8 GPUs) in this table")
    8
    """
    found = _STATED_BASE.search(baseline or "")
    return int(found.group(1).replace(",", "")) if found else None


def audit_scaling(results: pl.DataFrame, rule: audit.AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per scaling claim (audit_mfu.AUDIT_COLUMNS): reported, recomputed, verdict, convention, why."""
    if "baseline" not in results.columns:
        results = results.with_columns(baseline=pl.lit(None, dtype=pl.String))
    claim_rows = results.filter(pl.col("metric").is_in(CLAIM_METRICS))
    claims = [r for r in claim_rows.iter_rows(named=True) if pairing.is_scaling_claim(r)]
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    keys = [c for c in pairing.SERIES_COLUMNS if c in results.columns]  # a column left out is None in every key
    throughput = results.filter(pl.col("metric").is_in(THROUGHPUT_METRICS), pl.col("n_devices").is_not_null(),
                                pl.col("value") > 0)
    if keys:  # only the series some claim is in: the rows of the others are never read (0.3 s on 100,000 results)
        throughput = throughput.join(claim_rows.select(keys).unique(), on=keys, how="semi", nulls_equal=True,
                                     maintain_order="left")
    for r in throughput.iter_rows(named=True):
        series.setdefault(_series_key(r), []).append(r)
    indexes: dict[tuple[Any, ...], list[_Points]] = {}  # per series key: grouped once, not once per claim
    rows = []
    for c in claims:
        key = _series_key(c)
        if key not in indexes:
            indexes[key] = _points_per_metric(series.get(key, []))
        rows.append(_audit_one(c, series.get(key, []), indexes[key], rule))
    return pl.DataFrame(rows, schema=audit_mfu.AUDIT_COLUMNS)


@dataclass(frozen=True, slots=True)
class _Points:
    """One throughput metric's scaling points of a series (calc.pairing's grouping), indexed for lookups: the
    points at each device count (in order) and each sub-series' throughput per device count."""

    at_devices: dict[int, list[pairing.ScalingPoint]]
    by_series: dict[str, dict[int, float]]
    rows: dict[str, dict[int, Mapping[str, Any]]]  # the result row behind each throughput of by_series


def _points_per_metric(members: Sequence[Mapping[str, Any]]) -> list[_Points]:
    """The series' scaling points per throughput metric, in THROUGHPUT_METRICS order."""
    out = []
    for metric in THROUGHPUT_METRICS:
        points = pairing.scaling_series([m for m in members if m["metric"] == metric], lambda r: str(r["metric"]),
                                        THROUGHPUT_METRICS[0])
        index = _Points({}, {}, {})
        for p in points:
            index.at_devices.setdefault(p.row["n_devices"], []).append(p)
            index.by_series.setdefault(p.series, {})[p.row["n_devices"]] = p.throughput
            index.rows.setdefault(p.series, {})[p.row["n_devices"]] = p.row
        out.append(index)
    return out


def _series_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in pairing.SERIES_COLUMNS)


def _audit_one(claim: Mapping[str, Any], members: Sequence[Mapping[str, Any]],
               points: Sequence[_Points], rule: audit.AuditRule) -> dict[str, Any]:
    reported, unit, n = float(claim["value"]), UNITS[claim["metric"]], claim.get("n_devices")
    by_n, rows, why = _throughput_by_devices(claim, members, points)
    base = stated_base(claim.get("baseline")) or (min(by_n) if by_n else None)
    if why is None and base not in by_n:
        why = f"the stated baseline of {base} devices has no throughput row in its series"
    if why is not None or n is None or base is None:
        return claim_row(claim, reported, Judgement("unchecked", None, None, why), unit, rule,
                         relation=RELATIONS[claim["metric"]])
    others = sorted(b for b in by_n if b not in (base, n))
    candidates = [c for c in (_candidate(claim["metric"], by_n, n, b, b == base) for b in [base, *others])
                  if c is not None]
    if not candidates or candidates[0].name != DEFAULT:
        return claim_row(claim, reported, Judgement("unchecked", None, None, "its throughputs give no finite ratio"),
                         unit, rule, relation=RELATIONS[claim["metric"]])
    basis = f"the series' throughput at {n:,} and {base:,} devices ({by_n[n]:,.0f} and {by_n[base]:,.0f} tokens/s)"
    judgement = judge(reported, candidates, rule.tolerance, lambda v: _show(v, unit), basis)
    convention = judgement.convention or ""
    used = int(convention.removeprefix("base-")) if convention.startswith("base-") else base
    return claim_row(claim, reported, judgement, unit, rule, relation=RELATIONS[claim["metric"]]) | {
        "inputs": _inputs(rows, n, used)}


def _inputs(rows: Mapping[int, Mapping[str, Any]], n: int, base: int) -> str:
    """The throughput rows a scaling verdict used: at the claim's device count, then at its base (once when the
    two are one)."""
    return "; ".join(pairing.describe_input(r.get("id"), r.get("source_id"), r.get("locator"), bool(r.get("_derived")))
                     for r in (rows[d] for d in dict.fromkeys((n, base))))


def _throughput_by_devices(claim: Mapping[str, Any], members: Sequence[Mapping[str, Any]],
                           points_per_metric: Sequence[_Points]
                           ) -> tuple[dict[int, float], dict[int, Mapping[str, Any]], str | None]:
    """All-device tokens/s per device count of the claim's series (calc.pairing's grouping, `points_per_metric`
    from _points_per_metric; per-device rows first), the result row behind each, and why there is nothing to
    recompute from."""
    if claim.get("n_devices") is None:
        return {}, {}, "the claim states no device count"
    if not members:
        return {}, {}, ("no tokens/s rows of the same source, model, workload, precision, strategy and accelerator "
                        "to recompute it from")
    for points in points_per_metric:
        hit = next((p for p in points.at_devices.get(claim["n_devices"], [])
                    if claim.get("global_batch") in (None, p.row.get("global_batch"))), None)
        if hit is not None:
            return dict(points.by_series[hit.series]), dict(points.rows[hit.series]), None
    counts = sorted({m["n_devices"] for m in members})
    if len(counts) < 2:
        return {}, {}, f"its series has throughput at only {counts[0]:,} devices, so there is no scaling to recompute"
    return {}, {}, f"its series has no throughput row at the claim's {claim['n_devices']:,} devices"


def _candidate(metric: str, by_n: Mapping[int, float], n: int, base: int, default: bool) -> Candidate | None:
    if metric == "scaling_efficiency":
        value, _ = safe(lambda: metrics.scaling_efficiency(by_n[n], n, by_n[base], base))
    else:
        value, _ = safe(lambda: metrics.speedup(by_n[n], by_n[base]))
    if value is None:
        return None
    return Candidate(DEFAULT if default else f"base-{base}", f"measuring against {base:,} devices", value)


def _show(value: float, unit: str) -> str:
    return f"{value:.1%}" if unit == "fraction" else f"{value:.3g}x"
