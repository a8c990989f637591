"""Pairing arithmetic: which baseline a candidate is compared with, and a scaling series against its smallest
device count; pure functions over result rows (mappings with model_id, n_devices, value, metric).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

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


def scaling_series(rows: Iterable[Mapping[str, Any]], series_of: Callable[[Mapping[str, Any]], str],
                   per_device_metric: str) -> list[ScalingPoint]:
    """Rows grouped into series (by `series_of`); each series of two or more device counts is measured against
    its smallest. A per-device metric is multiplied by the device count to give the all-device throughput."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(series_of(r), []).append(r)
    out: list[ScalingPoint] = []
    for key, members in groups.items():
        if len({m["n_devices"] for m in members}) < 2:
            continue
        members.sort(key=lambda m: m["n_devices"])
        base = members[0]
        per_device = base["metric"] == per_device_metric
        base_total, base_n = _total(base, per_device), base["n_devices"]
        for m in members:
            thr, n = _total(m, per_device), m["n_devices"]
            eff, why = _efficiency(thr, n, base_total, base_n)
            out.append(ScalingPoint(key, m, thr, base_total * n / base_n, eff, why, base_n))
    return out


def _total(row: Mapping[str, Any], per_device: bool) -> float:
    """All-device throughput of a row: a per-device value times the device count."""
    return float(row["value"]) * row["n_devices"] if per_device else float(row["value"])


def _efficiency(throughput: float, devices: int, base_throughput: float, base_devices: int) -> tuple[float | None, str]:
    return safe(lambda: metrics.scaling_efficiency(throughput, devices, base_throughput, base_devices))
