"""The audit as first written: one claim at a time, in plain Python (test oracle only).

perfledger.calc.audit computes the same table with joins; tests/calc/test_audit_vectorized.py checks that both
give the same frame. The rule, schema and number formats are the real module's; the matching below is not.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from perfledger.calc import audit, pairing
from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc.audit import (
    AUDIT_SCHEMA,
    PEFT_WORKLOADS,
    AuditRule,
    _peft_reason,
    no_architecture,
    relative_difference,
)
from perfledger.errors import InvalidInput

DEFAULT_RULE = AuditRule()


def audit_claims(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                 rule: AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per model-TFLOPS claim with reported, recomputed, rel_diff, tolerance, verdict and why."""
    results = pairing.with_config_keys(results)
    flops = _Flops({row["id"]: row for row in models.iter_rows(named=True)})
    accels = {row["id"]: row for row in accelerators.iter_rows(named=True)}
    claims = results.filter(pl.col("metric") == "model_tflops_per_device")
    throughput = _Throughput(results.filter(pl.col("metric") == "tokens_per_s_per_device"),
                             pairing.config_keys(results, with_source=False))
    rows = [_audit_one(claim, throughput, flops, accels, rule) for claim in claims.iter_rows(named=True)]
    if not rows:
        return pl.DataFrame(schema=AUDIT_SCHEMA)
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row")


class _Throughput:
    """The tokens/s rows a claim can be checked against, indexed once by configuration (source aside)."""

    def __init__(self, rows: pl.DataFrame, keys: list[str]) -> None:
        self.keys = keys
        self.by_config: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for row in rows.iter_rows(named=True):
            if row["value"] is not None and math.isfinite(row["value"]) and row["value"] > 0:
                self.by_config[tuple(row.get(k) for k in keys)].append(row)

    def nearest_tier(self, claim: Mapping[str, Any], cross_source: bool) -> tuple[int, list[dict[str, Any]]]:
        """The rows of the claim's printed row (0), else of its source (1), else of other sources (2, only when
        asked): equal to the claim on every configuration column (a missing value matches only a missing one)."""
        rows = self.by_config.get(tuple(claim.get(k) for k in self.keys), [])
        tiers: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if row["source_id"] != claim["source_id"]:
                tiers[2].append(row)
            elif claim.get("locator") is not None and row.get("locator") == claim.get("locator"):
                tiers[0].append(row)
            else:
                tiers[1].append(row)
        for tier in (0, 1, 2) if cross_source else (0, 1):
            if tiers[tier]:
                return tier, tiers[tier]
        return -1, []


def _audit_one(claim: Mapping[str, Any], throughput: _Throughput, flops: _Flops,
               accels: Mapping[str, Mapping[str, Any]], rule: AuditRule) -> dict[str, Any]:
    row: dict[str, Any] = {k: claim.get(k) for k in ("source_id", "model_id", "accelerator_id", "n_devices",
                                                       "workload", "precision", "seq_len", "metric", "unit")}
    row |= {"claim_id": claim.get("id"), "reported": claim["value"], "tolerance": rule.tolerance,
            "formula": fl.FORMULA_TITLES.get(rule.formula, rule.formula), "recomputed": None, "rel_diff": None,
            "tokens_per_s_per_device": None, "mfu_at_stated_precision": None, "peak_used": None, "inputs": None}
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
        notes.append(no_architecture(claim.get("_model")))
        return "unchecked"
    tier, pairs = throughput.nearest_tier(claim, rule.cross_source)
    if not pairs:
        notes.append("no tokens/s figure for the same configuration in its own source"
                     + (" or any other" if rule.cross_source else " (other sources not asked: --cross-source)"))
        return "unchecked"
    best = min(pairs, key=lambda p: abs(relative_difference(claim["value"], m.model_tflops(p["value"], f))))
    recomputed = m.model_tflops(best["value"], f)
    diff = relative_difference(claim["value"], recomputed)
    derived = "; tokens/s derived from its step time, global batch, sequence length and devices" \
        if best["_derived"] else ""
    where = f", {best['locator']}" if best.get("locator") is not None else ""
    row |= {"recomputed": recomputed, "rel_diff": diff, "tokens_per_s_per_device": best["value"],
            "inputs": f"result {best['id']} ({best['source_id']}{where}{derived})"}
    assumed = None if claim.get("seq_len") else (flops.real.shapes.get(claim.get("model_id") or "") or {}).get("seq_len")
    if assumed is not None:  # the row prints no sequence length: the verdict says the catalog's was assumed
        row["inputs"] += f"; {audit.seq_assumed(assumed)}"
        notes.append(audit.seq_assumed(assumed))
    if tier == 2:
        notes.append(f"its own source prints no tokens/s for this configuration; checked against {best['source_id']} "
                     "(cross-source pairing asked)")
    if len(pairs) > 1:
        notes.append(f"{len(pairs)} tokens/s rows share this configuration; the closest was used")
    if abs(diff) <= rule.tolerance:
        return "consistent"
    return _other_convention(claim, best["value"], flops, rule, notes)


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
    reason = f"{util:.1%} of the dense {precision} peak exceeds the {rule.mfu_ceiling:.0%} ceiling"
    if precision != "fp8":
        try:
            fp8 = m.peak_tflops(acc, "fp8")
        except InvalidInput:
            return reason + "; no FP8 peak that would explain it (sparsity or a different FLOP count?)"
        if value / fp8.tflops > rule.mfu_ceiling:
            return reason + f"; even the FP8 dense peak gives {value / fp8.tflops:.1%} (a sparse peak or another FLOP count?)"
        return reason + f"; plausible only in FP8 ({value / fp8.tflops:.1%} of the FP8 dense peak)"
    return reason + "; check the FLOP count (recompute counted as model FLOPs?) or a sparse peak"
