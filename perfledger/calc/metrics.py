"""Scalar metrics: model TFLOPS, MFU, speedup, scaling efficiency, time and cost to train.

Pure functions of numbers; each docstring gives the formula, the units and a published example.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfledger.errors import InvalidInput
from perfledger.vocabulary import PEAK_COLUMN, Precision

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0


def _positive(name: str, value: float | None) -> float:
    if value is None:
        raise InvalidInput(f"{name} is missing")
    if not value > 0:  # also catches NaN
        raise InvalidInput(f"{name} must be positive, got {value}")
    return float(value)


def model_tflops(tokens_per_s_per_device: float, flops_per_token: float) -> float:
    """Model TFLOP/s per device from throughput and FLOPs per token.

    model_tflops = tokens_per_s_per_device * flops_per_token / 1e12     (TFLOP/s/device)

    >>> round(model_tflops(1880, 444.491e9), 1)  # NeMo, Llama 2 70B on H200: published 836
    835.6
    """
    return _positive("tokens_per_s_per_device", tokens_per_s_per_device) * _positive("flops_per_token", flops_per_token) / 1e12


@dataclass(frozen=True, slots=True)
class Peak:
    """The dense peak an MFU was divided by, and on what basis."""

    tflops: float
    precision: str
    basis: str  # "per GPU", "per GCD (package / 2)", ...
    accelerator_id: str
    note: str = ""

    def describe(self) -> str:
        extra = f"; {self.note}" if self.note else ""
        return f"{self.tflops:g} TFLOP/s dense {self.precision} {self.basis} ({self.accelerator_id}){extra}"


def peak_tflops(accelerator: Mapping[str, Any], precision: str) -> Peak:
    """The dense peak TFLOP/s of one framework device at `precision`.

    For a multi-die package (MI250/MI250X: 2 GCDs, each one framework device) the package peak is divided by
    `devices_per_package`. fp16 and bf16 share a peak where only one is listed.

    >>> peak_tflops({"id": "h200", "bf16_tflops": 989.4, "unit_basis": "GPU"}, "bf16").tflops
    989.4
    >>> peak_tflops({"id": "mi250", "bf16_tflops": 362.1, "unit_basis": "package", "devices_per_package": 2}, "bf16").tflops
    181.05
    """
    acc_id = str(accelerator.get("id", "?"))
    try:
        prec = Precision(precision)
    except ValueError:
        raise InvalidInput(f"unknown precision {precision!r}; known: {', '.join(p.value for p in Precision)}") from None
    if prec not in PEAK_COLUMN:
        raise InvalidInput(f"no dense peak is defined for precision {precision!r}; state fp32, tf32, fp16, bf16 or fp8")
    value = accelerator.get(PEAK_COLUMN[prec])
    note = ""
    if value in (None, 0) and prec in (Precision.FP16, Precision.BF16):
        other = Precision.BF16 if prec is Precision.FP16 else Precision.FP16
        value = accelerator.get(PEAK_COLUMN[other])
        note = f"{prec.value} peak taken from the {other.value} column" if value else ""
    if value in (None, 0):
        raise InvalidInput(f"{acc_id} has no published dense {prec.value} peak in the catalog")
    per_package = int(accelerator.get("devices_per_package") or 1)
    basis = f"per {accelerator.get('unit_basis') or 'device'}"
    if per_package > 1:
        return Peak(float(value) / per_package, prec.value, f"per device = package / {per_package}", acc_id, note)
    return Peak(float(value), prec.value, basis, acc_id, note)


def mfu(model_tflops_per_device: float, peak_tflops_per_device: float) -> float:
    """Model FLOPs utilization: achieved model TFLOP/s over the dense peak of the run's precision.

    mfu = model_tflops_per_device / peak_tflops_per_device        (fraction, 0..1)

    >>> round(mfu(211.2, 312), 3)  # NeMo A100 Llama 2 7B against the A100 BF16 dense peak
    0.677
    """
    return _positive("model_tflops_per_device", model_tflops_per_device) / _positive("peak_tflops", peak_tflops_per_device)


def speedup(candidate: float, baseline: float) -> float:
    """How many times faster the candidate is than the baseline, on one higher-is-better metric.

    speedup = candidate / baseline        (dimensionless; both inputs in the same unit)

    >>> round(speedup(16_913, 4_583), 2)  # NeMo, Llama 2 7B, tokens/s/GPU, H200 vs A100: published 3.7x
    3.69
    """
    return _positive("candidate", candidate) / _positive("baseline", baseline)


def scaling_efficiency(throughput: float, devices: float, base_throughput: float, base_devices: float) -> float:
    """Measured speedup over the ideal (linear) speedup when going from base_devices to devices.

    scaling_efficiency = (throughput / base_throughput) / (devices / base_devices)     (fraction; may exceed 1)

    >>> round(scaling_efficiency(7_200, 64, 1_000, 8), 3)  # 7.2x faster on 8x the devices
    0.9
    """
    measured = _positive("throughput", throughput) / _positive("base_throughput", base_throughput)
    ideal = _positive("devices", devices) / _positive("base_devices", base_devices)
    return measured / ideal


def time_to_train_s(tokens: float, devices: float, tokens_per_s_per_device: float) -> float:
    """Wall time to process `tokens` at a measured per-device throughput.

    time_to_train = tokens / (devices * tokens_per_s_per_device)     (s)

    >>> round(time_to_train_s(1e9, 8, 1880) / 3600, 2)  # 8 x H200, Llama 2 70B, 1B tokens: "a little over 18 h"
    18.47
    """
    return _positive("tokens", tokens) / (_positive("devices", devices) * _positive("tokens_per_s_per_device", tokens_per_s_per_device))


def time_to_train_from_peak_s(
    tokens: float, flops_per_token: float, devices: float, peak_tflops_per_device: float, efficiency: float
) -> float:
    """Wall time to process `tokens` when each device sustains `efficiency` of its dense peak.

    time_to_train = tokens * flops_per_token / (devices * peak_tflops * 1e12 * efficiency)     (s)

    >>> round(time_to_train_from_peak_s(300e9, 1076.37e9, 1024, 312, 0.5) / 86400, 1)  # GPT-3 175B, 1024 A800
    23.4
    """
    eff = _positive("efficiency", efficiency)
    if eff > 1:
        raise InvalidInput(f"efficiency is a fraction of peak (0-1], got {efficiency}")
    denominator = _positive("devices", devices) * _positive("peak_tflops", peak_tflops_per_device) * 1e12 * eff
    return _positive("tokens", tokens) * _positive("flops_per_token", flops_per_token) / denominator


def cost_to_train_usd(seconds: float, devices: float, usd_per_device_hour: float) -> float:
    """Rental cost of `devices` for `seconds` at a $/device-hour price.

    cost = seconds / 3600 * devices * usd_per_device_hour     (USD)

    >>> round(cost_to_train_usd(66_489.4, 8, 4.0), 2)  # the 18.5 h H200 fine-tune at $4/GPU-hour
    591.02
    """
    hours = _positive("seconds", seconds) / SECONDS_PER_HOUR
    return hours * _positive("devices", devices) * _positive("usd_per_device_hour", usd_per_device_hour)


def per_watt(value: float, tdp_w: float) -> float:
    """A throughput per watt of thermal design power (TDP, not measured draw).

    per_watt = value / tdp_w      (value's unit per W)

    >>> round(per_watt(1880, 700), 3)
    2.686
    """
    return _positive("value", value) / _positive("tdp_w", tdp_w)


def per_dollar_hour(value: float, usd_per_device_hour: float) -> float:
    """A per-device throughput per dollar-hour of that device.

    per_dollar = value / usd_per_device_hour      (value's unit per $/h)

    >>> round(per_dollar_hour(1880, 4.0), 1)
    470.0
    """
    return _positive("value", value) / _positive("usd_per_device_hour", usd_per_device_hour)


def minutes(seconds: float) -> float:
    """A duration in minutes, the unit MLPerf Training reports its time to train in.

    minutes = seconds / 60     (min)

    >>> round(minutes(3147.895), 2)  # NVIDIA Eos, 512 H100, GPT-3 175B (MLPerf Training v4.0)
    52.46
    """
    return _positive("seconds", seconds) / 60.0
