"""Audit of time-to-train claims: recomputed from their stated tokens and devices and the same configuration's
throughput.

    seconds = tokens / (devices x tokens_per_s_per_device)          (metrics.time_to_train_s)

The tokens and devices come from the claim. NVIDIA's "est. days to train 10T tokens on 1K GPUs" columns name
them in the metric (1K read as 1,024 GPUs; 1,000 is tried as a convention), a fine-tuning estimate runs its
tokens on the claim's own device count, and a time_to_train_s claim states its tokens in its note ("1B tokens").
The throughput is the same source and configuration's tokens/s/device, else its tokens/s over its devices, else
its model TFLOP/s (or MFU x the dense peak) over the FLOPs per token of each known FLOPs convention.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from perfledger.calc import audit, audit_mfu, metrics, pairing
from perfledger.calc.audit_judge import DEFAULT, Candidate, Judgement, claim_row, judge, once_per_distinct
from perfledger.calc.conventions import conventions
from perfledger.errors import InvalidInput

DEFAULT_RULE = audit.AuditRule()
BASIS_METRICS = ("tokens_per_s_per_device", "tokens_per_s", "model_tflops_per_device", "mfu")


@dataclass(frozen=True, slots=True)
class TimeClaim:
    """What a time-to-train metric states: tokens (None: in the note), devices (None: the claim's own count),
    the seconds in one unit of its value, and the other reading of its device count (1K = 1,000)."""

    tokens: float | None
    devices: int | None
    seconds_per_unit: float
    unit: str
    devices_alt: int | None = None


TIME_CLAIMS: dict[str, TimeClaim] = {
    "est_days_to_train_10T_tokens_1k_gpus": TimeClaim(10e12, 1024, metrics.SECONDS_PER_DAY, "days", 1000),
    "est_days_to_train_1T_tokens_1k_gpus": TimeClaim(1e12, 1024, metrics.SECONDS_PER_DAY, "days", 1000),
    "est_minutes_to_finetune_10M_tokens": TimeClaim(10e6, None, 60.0, "min"),
    "time_to_train_s": TimeClaim(None, None, 1.0, "s"),
}
CLAIM_METRICS = tuple(TIME_CLAIMS)
RELATION = "time_to_train = tokens / (tokens_per_s_per_device x n_devices)"
_TOKENS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([KMBT])[- ]tokens?\b")
_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def tokens_in(note: str | None) -> float | None:
    """The token count a note states ("1B-token SFT", "on 300B tokens"); None when absent or ambiguous.

    >>> tokens_in("GPT-3 175B on 300B tokens, 128 A800 nodes")
    300000000000.0
    """
    found = {float(n) * _SCALE[s] for n, s in _TOKENS.findall(note or "")}
    return found.pop() if len(found) == 1 else None


def audit_time_to_train(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                        rule: audit.AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per time-to-train claim (audit_mfu.AUDIT_COLUMNS): reported, recomputed, verdict, convention, why."""
    results = pairing.with_config_keys(results)
    basis = audit_mfu.figures_by_config(results, list(BASIS_METRICS))
    shapes = {r["id"]: r for r in models.iter_rows(named=True)}
    accels = {r["id"]: r for r in accelerators.iter_rows(named=True)}

    def audit_one(claim: dict[str, Any]) -> dict[str, Any]:
        values, refs, tier = basis.for_claim(claim, rule.cross_source)
        return audit_mfu.with_inputs(_audit_one(claim, values, shapes, accels, rule), refs, tier, BASIS_METRICS)

    claims = results.filter(pl.col("metric").is_in(CLAIM_METRICS))
    return once_per_distinct(claims, audit_one, audit_mfu.AUDIT_COLUMNS)


def _audit_one(claim: Mapping[str, Any], basis: Mapping[str, float], shapes: Mapping[str, Mapping[str, Any]],
               accels: Mapping[str, Mapping[str, Any]], rule: audit.AuditRule) -> dict[str, Any]:
    kind, reported = TIME_CLAIMS[claim["metric"]], float(claim["value"])
    tokens = kind.tokens if kind.tokens is not None else tokens_in(claim.get("note"))
    devices = kind.devices or claim.get("n_devices")
    throughputs = list(_throughputs(claim, basis, shapes, accels))
    why = ("the claim states no token count (none in its metric or note)" if tokens is None
           else "the claim states no device count" if not devices
           else _no_throughput(claim, basis, shapes, accels) if not throughputs else None)
    if why is not None or tokens is None or not devices:
        return claim_row(claim, reported, Judgement("unchecked", None, None, why), kind.unit, rule, relation=RELATION)
    readings = [(DEFAULT, "", devices)] + list(_other_device_readings(kind, devices))
    candidates = [Candidate(_join(t_name, d_name), _title(t_title, d_title),
                            metrics.time_to_train_s(tokens, n, tps) / kind.seconds_per_unit)
                  for d_name, d_title, n in readings for t_name, t_title, tps in throughputs]
    candidates.sort(key=lambda c: c.name != DEFAULT)
    tps0 = throughputs[0][2]
    basis_text = f"{_si(tokens)} tokens on {devices:,} devices at {tps0:,.0f} tokens/s/device{throughputs[0][1]}"
    judgement = judge(reported, candidates, rule.tolerance, lambda v: show_time(v, kind.unit), basis_text)
    return claim_row(claim, reported, judgement, kind.unit, rule, tokens_per_s=tps0, relation=RELATION)


def _other_device_readings(kind: TimeClaim, devices: int) -> Iterator[tuple[str, str, int]]:
    """The other reading of an approximate device count: the metric's own (1K = 1,024, else 1,000), or, for a
    claim's stated count, a round thousand read the other way ("1,000 cards" for 1,024, "1K" for 1,000)."""
    if kind.devices_alt:
        yield "1000-devices", ", 1K read as 1,000 devices", kind.devices_alt
    elif (other := thousand_reading(devices)) is not None:
        yield "1000-devices", f", {devices:,} devices read as {other:,} (1K both ways)", other


def thousand_reading(devices: int) -> int | None:
    """A round count of thousands read the other way: k x 1,024 <-> k x 1,000 (k >= 1); None for any other count.

    >>> thousand_reading(1024), thousand_reading(2000), thousand_reading(512)
    (1000, 2048, None)
    """
    if devices >= 1000 and devices % 1024 == 0:
        return devices // 1024 * 1000
    if devices >= 1000 and devices % 1000 == 0:
        return devices // 1000 * 1024
    return None


def _throughputs(claim: Mapping[str, Any], basis: Mapping[str, float], shapes: Mapping[str, Mapping[str, Any]],
                 accels: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str, float]]:
    """(convention, how it reads, tokens/s/device) from the most direct basis the configuration has."""
    n = claim.get("n_devices")
    if "tokens_per_s_per_device" in basis:
        yield DEFAULT, "", basis["tokens_per_s_per_device"]
        return
    if "tokens_per_s" in basis and n:
        yield DEFAULT, " (its tokens/s over its devices)", basis["tokens_per_s"] / n
        return
    shape, seq = audit_mfu.shape_at(shapes.get(claim.get("model_id") or ""), claim.get("seq_len"))
    if shape is None:
        return
    tflops = basis.get("model_tflops_per_device")
    peaks: dict[str, float] = {}  # only an MFU basis divides by a peak, and may use another precision's
    if tflops is None and "mfu" in basis:
        found = audit_mfu.peaks_for(accels.get(claim.get("accelerator_id") or ""), claim.get("precision"))
        if isinstance(found, str):
            return
        peaks, tflops = found, basis["mfu"] * found["_stated"]
    if tflops is None:
        return
    source = "model TFLOP/s" if "model_tflops_per_device" in basis else f"MFU {basis.get('mfu', 0):.0%} of the peak"
    for c in conventions(claim.get("precision")):
        if c.peak_precision is not None and c.peak_precision not in peaks:
            continue
        value = tflops if c.peak_precision is None else basis["mfu"] * peaks[c.peak_precision]
        try:
            tps = value * 1e12 / c.flops(shape, seq)
        except (InvalidInput, ZeroDivisionError):
            continue
        yield c.name, f" (from its {source}, {c.title} FLOPs per token)", tps


def _no_throughput(claim: Mapping[str, Any], basis: Mapping[str, float], shapes: Mapping[str, Mapping[str, Any]],
                   accels: Mapping[str, Mapping[str, Any]]) -> str:
    if not basis:
        return ("no tokens/s, model TFLOP/s or MFU row of the same source and configuration to recompute the time "
                "from")
    if audit_mfu.shape_at(shapes.get(claim.get("model_id") or ""), claim.get("seq_len"))[0] is None:
        return "the configuration states only FLOP rates and the model has no shape in the catalog"
    return "the configuration states only MFU and the accelerator has no dense peak at its precision"


def show_time(value: float, unit: str) -> str:
    """A time figure with its unit; seconds also in hours or days.

    >>> show_time(64800, "s"), show_time(4.83, "days")
    ('64,800 s (18.0 h)', '4.83 days')
    """
    text = f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.3g} {unit}"
    if unit == "s" and value >= 2 * metrics.SECONDS_PER_DAY:
        return f"{text} ({value / metrics.SECONDS_PER_DAY:,.1f} days)"
    if unit == "s" and value >= metrics.SECONDS_PER_HOUR:
        return f"{text} ({value / metrics.SECONDS_PER_HOUR:,.1f} h)"
    return text


def _title(throughput: str, devices: str) -> str:
    """How a reading reads before "gives": its device reading, then where its throughput came from."""
    return (devices.removeprefix(", ") or "the stated device count") + throughput if throughput else devices


def _join(*names: str) -> str:
    return "+".join(n for n in names if n != DEFAULT) or DEFAULT


def _si(tokens: float) -> str:
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if tokens >= scale:
            return f"{tokens / scale:g}{suffix}"
    return f"{tokens:g}"
