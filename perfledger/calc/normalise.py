"""Per-device, per-package, per-watt, per-dollar and MFU normalisation of one stored result row; pure.

A refusal of a calc function (InvalidInput) or a non-finite result becomes a `why` sentence beside a missing
value, so one bad catalog row costs its own cell and never the page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from perfledger.calc import flops, metrics
from perfledger.errors import InvalidInput

NORMALIZATIONS = ("device", "mfu", "watt", "dollar")
RL_STEP = ("RL post-training step throughput (generation, scoring and training in one step) is its own quantity, "
           "not a training rate")


def safe(fn: Callable[[], float]) -> tuple[float | None, str]:
    """(value, "") or (None, why) for one calc call; a calc refusal becomes the `why` sentence."""
    try:
        value = fn()
    except InvalidInput as exc:
        return None, str(exc)
    return (value, "") if math.isfinite(value) else (None, "not a finite number")


def flops_for(row: Mapping[str, Any], models: Mapping[str, dict[str, Any]], formula: str) -> tuple[float | None, str]:
    """FLOPs per token of the row's model at the row's sequence length (the model's default when unstated)."""
    model = models.get(str(row.get("model_id")))
    if model is None:
        return None, f"model {row.get('model_as_printed') or row.get('model_id')!r} is not in the catalog"
    seq = row.get("seq_len") or model.get("seq_len")
    note = "" if row.get("seq_len") else f"seq len not stated; model default {seq} used"
    value, why = safe(lambda: flops.flops_per_token(flops.ModelShape.from_row(model), int(seq or 0), formula))
    return value, why or note


def recomputed_tflops(row: Mapping[str, Any], models: Mapping[str, dict[str, Any]],
                      formula: str) -> tuple[float | None, str]:
    """Model TFLOP/s/device implied by a tokens/s/device row: value x FLOPs per token / 1e12."""
    fpt, why = flops_for(row, models, formula)
    if fpt is None:
        return None, why
    tokens_per_s = float(row["value"])
    value, why2 = safe(lambda: metrics.model_tflops(tokens_per_s, fpt))
    return value, why2 or why


@dataclass(frozen=True, slots=True)
class Basis:
    """How to normalise: one of NORMALIZATIONS, per package or per device, the price, the FLOPs formula."""

    norm: str
    unit: str  # the label of the row's metric, e.g. "tokens/s/device"
    is_tflops: bool  # the rows already hold model TFLOP/s/device (else tokens/s/device, recomputed for MFU)
    per_package: bool = False
    usd_per_hour: float = 0.0
    formula: str = flops.DEFAULT_FORMULA


@dataclass(frozen=True, slots=True)
class Normalised:
    value: float | None
    unit: str
    peak: float | None
    why: str


def normalised(row: Mapping[str, Any], acc: Mapping[str, Any] | None, basis: Basis,
               models: Mapping[str, dict[str, Any]]) -> Normalised:
    """The row's value on the chosen basis, the peak an MFU used, and why a value is missing."""
    value, unit = float(row["value"]), basis.unit
    if acc is None:
        return Normalised(None, unit, None, "accelerator not in the catalog")
    per_pkg = int(acc.get("devices_per_package") or 1) if basis.per_package else 1
    if basis.norm == "device":
        per = unit.replace("device", "package") if per_pkg > 1 or basis.per_package else unit
        return Normalised(value * per_pkg, per, None, "")
    if basis.norm == "watt":
        v, why = safe(lambda: metrics.per_watt(value * per_pkg, float(acc.get("tdp_w") or 0)))
        return Normalised(v, f"{unit.split('/device')[0]} per W of TDP", None, why and f"no TDP in the catalog ({why})")
    if basis.norm == "dollar":
        v, why = safe(lambda: metrics.per_dollar_hour(value, basis.usd_per_hour))
        return Normalised(v, f"{unit.split('/device')[0]}/device per $/h", None, why)
    return _as_mfu(row, acc, basis, models)


def _as_mfu(row: Mapping[str, Any], acc: Mapping[str, Any], basis: Basis,
            models: Mapping[str, dict[str, Any]]) -> Normalised:
    if row.get("workload") == "rlhf" and not basis.is_tflops:
        return Normalised(None, "MFU (fraction)", None, f"{RL_STEP}: no MFU from it")
    precision = row.get("precision") or "unstated"
    note = "" if precision not in ("unstated", "") else "precision not stated: bf16 assumed; "
    try:
        peak = metrics.peak_tflops(acc, "bf16" if note else precision)
    except InvalidInput as exc:
        return Normalised(None, "MFU (fraction)", None, str(exc))
    tflops, tflops_why = (float(row["value"]), "") if basis.is_tflops else recomputed_tflops(row, models, basis.formula)
    if tflops is None:
        return Normalised(None, "MFU (fraction)", peak.tflops, note + tflops_why)
    model_tflops = tflops
    v, why = safe(lambda: metrics.mfu(model_tflops, peak.tflops))
    return Normalised(v, "MFU (fraction)", peak.tflops, (note + why + (f"; {peak.note}" if peak.note else "")).strip("; "))


def measured_precision(row: Mapping[str, Any]) -> str:
    """The precision a row's MFU is compared at: the stated one, else bf16."""
    return str(row.get("precision")) if row.get("precision") not in (None, "", "unstated") else "bf16"


def vs_measured(mfu: float | None, peak: float | None, achievable: float | None) -> float | None:
    """MFU against what the machine really reached: (mfu x datasheet peak) / measured matmul peak."""
    if mfu is None or peak is None or achievable is None:
        return None
    model_tflops = mfu * peak
    return safe(lambda: metrics.mfu(model_tflops, achievable))[0]
