"""The audit as first written: one claim at a time, in plain Python (test oracle only).

perfledger.calc.audit computes the same table with joins; tests/calc/test_audit_vectorized.py checks that both
give the same frame. The rule, schema and number formats are the real module's; the matching below is not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from perfledger.calc import audit
from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc.audit import (
    AUDIT_SCHEMA,
    MATCH_KEYS,
    PEFT_WORKLOADS,
    AuditRule,
    _fmt_int,
    _peft_reason,
    relative_difference,
)
from perfledger.errors import InvalidInput

DEFAULT_RULE = AuditRule()


def audit_claims(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                 rule: AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per model-TFLOPS claim with reported, recomputed, rel_diff, tolerance, verdict and why."""
    flops = _Flops({row["id"]: row for row in models.iter_rows(named=True)})
    accels = {row["id"]: row for row in accelerators.iter_rows(named=True)}
    claims = results.filter(pl.col("metric") == "model_tflops_per_device")
    throughput = _Throughput(results.filter(pl.col("metric") == "tokens_per_s_per_device"))
    rows = [_audit_one(claim, throughput, flops, accels, rule) for claim in claims.iter_rows(named=True)]
    if not rows:
        return pl.DataFrame(schema=AUDIT_SCHEMA)
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row")


class _Throughput:
    """The tokens/s rows a claim can be checked against, indexed once (a claim's lookups are then O(1))."""

    def __init__(self, rows: pl.DataFrame) -> None:
        self.by_config: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        self.by_model_accelerator: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        for row in rows.iter_rows(named=True):
            self.by_config[_config_key(row)].append(row)
            self.by_model_accelerator[(row["model_id"], row["accelerator_id"])].append(row)

    def same_config(self, claim: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Rows equal to the claim on every MATCH_KEYS column (a missing value matches only a missing value)."""
        return self.by_config.get(_config_key(claim), [])

    def same_model_and_accelerator(self, claim: Mapping[str, Any]) -> list[dict[str, Any]]:
        model, accelerator = claim.get("model_id"), claim.get("accelerator_id")
        if model is None or accelerator is None:
            return []
        return self.by_model_accelerator.get((model, accelerator), [])


def _config_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(key) for key in MATCH_KEYS)


def _audit_one(claim: Mapping[str, Any], throughput: _Throughput, flops: _Flops,
               accels: Mapping[str, Mapping[str, Any]], rule: AuditRule) -> dict[str, Any]:
    row: dict[str, Any] = {k: claim.get(k) for k in ("source_id", "model_id", "accelerator_id", "n_devices",
                                                       "workload", "precision", "seq_len", "metric", "unit")}
    row |= {"claim_id": claim.get("id"), "reported": claim["value"], "tolerance": rule.tolerance,
            "formula": fl.FORMULA_TITLES.get(rule.formula, rule.formula), "recomputed": None, "rel_diff": None,
            "tokens_per_s_per_device": None, "mfu_at_stated_precision": None, "peak_used": None}
    notes: list[str] = []
    verdict = _consistency(claim, throughput, flops, rule, row, notes)
    row["verdict"] = verdict
    row["plausibility"] = _plausibility(claim, accels, rule, row, notes)
    row["explanation"] = "; ".join(notes)
    return row


class _Flops:
    """The real FLOPs lookup, asked per claim."""

    def __init__(self, shapes: Mapping[str, Mapping[str, Any]]) -> None:
        self.real = audit._Flops(shapes)

    def per_token(self, claim: Mapping[str, Any], formula: str) -> float | None:
        return self.real.per_token(claim.get("model_id"), claim.get("seq_len"), formula)


def _consistency(claim: Mapping[str, Any], throughput: _Throughput, flops: _Flops,
                 rule: AuditRule, row: dict[str, Any], notes: list[str]) -> str:
    f = flops.per_token(claim, rule.formula)
    if f is None:
        notes.append(f"no architecture for model {claim.get('model_id')!r} in the catalog: FLOPs unknown")
        return "unchecked"
    pairs = throughput.same_config(claim)
    if pairs:
        best = min((p["value"] for p in pairs), key=lambda tps: abs(relative_difference(claim["value"], m.model_tflops(tps, f))))
        recomputed = m.model_tflops(best, f)
        diff = relative_difference(claim["value"], recomputed)
        row |= {"recomputed": recomputed, "rel_diff": diff, "tokens_per_s_per_device": best}
        if len(pairs) > 1:
            notes.append(f"{len(pairs)} tokens/s rows share this configuration; the closest was used")
        if abs(diff) <= rule.tolerance:
            return "consistent"
        return _other_convention(claim, best, flops, rule, notes)
    return _match_elsewhere(claim, throughput, f, rule, row, notes)


def _other_convention(claim: Mapping[str, Any], tps: float, flops: _Flops,
                      rule: AuditRule, notes: list[str]) -> str:
    """Frameworks changed how they count FLOPs; a claim that matches another named formula says which."""
    for name in fl.FORMULAS:
        if name == rule.formula:
            continue
        f = flops.per_token(claim, name)
        if f is None:
            continue
        diff = relative_difference(claim["value"], m.model_tflops(tps, f))
        if abs(diff) <= rule.tolerance:
            notes.append(f"reproduced within {abs(diff):.1%} by the '{fl.FORMULA_TITLES[name]}' FLOPs count instead")
            return "other convention"
    f_rule = flops.per_token(claim, rule.formula)
    if claim.get("workload") in PEFT_WORKLOADS and f_rule:
        notes.append(_peft_reason(claim["value"] / m.model_tflops(tps, f_rule)))
    return "inconsistent"


def _match_elsewhere(claim: Mapping[str, Any], throughput: _Throughput, f: float, rule: AuditRule,
                     row: dict[str, Any], notes: list[str]) -> str:
    matches = []
    for other in throughput.same_model_and_accelerator(claim):
        recomputed = m.model_tflops(other["value"], f)
        diff = relative_difference(claim["value"], recomputed)
        if abs(diff) <= rule.tolerance:
            matches.append((abs(diff), other, recomputed, diff))
    if not matches:
        notes.append("no tokens/s figure for the same configuration, here or in any other source")
        return "unchecked"
    _, other, recomputed, diff = min(matches, key=lambda t: t[0])
    row |= {"recomputed": recomputed, "rel_diff": diff, "tokens_per_s_per_device": other["value"]}
    notes.append(
        f"the claim states no throughput of its own; it matches {other['source_id']} at "
        f"{_fmt_int(other.get('n_devices'))} devices ({other['value']:g} tokens/s/device -> {recomputed:.1f} TFLOP/s)"
        + (f", one of {len(matches)} matching rows" if len(matches) > 1 else "")
    )
    return "consistent"


def _plausibility(claim: Mapping[str, Any], accels: Mapping[str, Mapping[str, Any]], rule: AuditRule,
                  row: dict[str, Any], notes: list[str]) -> str:
    acc = accels.get(claim.get("accelerator_id") or "")
    if acc is None:
        notes.append("accelerator not in the catalog: MFU not checked")
        return "unchecked"
    stated = claim.get("precision") or "unstated"
    precision = "bf16" if stated in ("unstated", "", None) else stated
    try:
        peak = m.peak_tflops(acc, precision)
    except InvalidInput as exc:
        notes.append(f"MFU not checked: {exc}")
        return "unchecked"
    util = claim["value"] / peak.tflops
    assumed = " (assumed: precision unstated)" if precision != stated else ""
    row |= {"mfu_at_stated_precision": util, "peak_used": peak.describe() + assumed}
    if util <= rule.mfu_ceiling:
        return "plausible"
    notes.append(_implausible_reason(claim["value"], util, precision, acc, rule))
    return "implausible"


def _implausible_reason(value: float, util: float, precision: str, acc: Mapping[str, Any], rule: AuditRule) -> str:
    reason = f"{util:.0%} of the dense {precision} peak exceeds the {rule.mfu_ceiling:.0%} ceiling"
    if precision != "fp8":
        try:
            fp8 = m.peak_tflops(acc, "fp8")
        except InvalidInput:
            return reason + "; no FP8 peak that would explain it (sparsity or a different FLOP count?)"
        return reason + f"; plausible only in FP8 ({value / fp8.tflops:.0%} of the FP8 dense peak)"
    return reason + "; check the FLOP count (recompute counted as model FLOPs?) or a sparse peak"
