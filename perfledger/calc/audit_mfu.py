"""Audit of MFU and HFU claims: recomputed from the same configuration's tokens/s (or its model TFLOPS) over the
dense peak; when the default count disagrees, the convention that reproduces the claim is named.

    mfu = tokens_per_s_per_device x FLOPs per token / 1e12 / peak       (or model TFLOPS / peak)
    hfu = mfu x 4/3         (full activation recompute: one more forward pass, llm-foundry's and PaLM's HFU)

Every verdict other than consistent carries a one-sentence reason. One row per claim, in AUDIT_COLUMNS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from perfledger.calc import audit, pairing
from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc.audit_judge import once_per_distinct
from perfledger.calc.conventions import DEFAULT, Convention, conventions
from perfledger.errors import InvalidInput

CLAIM_METRICS = ("mfu", "hfu")
HFU_FACTOR = 4 / 3
DEFAULT_RULE = audit.AuditRule()
AUDIT_COLUMNS: dict[str, pl.DataType] = {**audit.AUDIT_SCHEMA, "convention": pl.String(), "reason": pl.String(),
                                          "relation": pl.String()}  # the relation a verdict used, as a formula


@dataclass(frozen=True, slots=True)
class Basis:
    """The first positive figure of each metric per printed row, per source configuration and per configuration
    (source aside), each with how a verdict names it (pairing.describe_input)."""

    keys: list[str]
    by_row: dict[tuple[Any, ...], dict[str, tuple[float, str]]]
    by_source: dict[tuple[Any, ...], dict[str, tuple[float, str]]]
    by_config: dict[tuple[Any, ...], dict[str, tuple[float, str]]]

    def for_claim(self, claim: Mapping[str, Any], cross_source: bool) -> tuple[dict[str, float], dict[str, str], int]:
        """The figures a claim is recomputed from: its own printed row's over its source configuration's (tier 0/1),
        else, when asked, another source's of the same configuration (tier 2); values, their names, the tier."""
        key = tuple(claim.get(k) for k in self.keys)
        own = self.by_source.get((*key, claim["source_id"]), {})
        row = self.by_row.get((*key, claim["source_id"], claim.get("locator")), {}) if claim.get("locator") else {}
        found, tier = {**own, **row}, 0 if row else 1
        if not found and cross_source:
            found, tier = self.by_config.get(key, {}), 2
        return {k: v for k, (v, _) in found.items()}, {k: ref for k, (_, ref) in found.items()}, tier


def figures_by_config(results: pl.DataFrame, metrics: list[str]) -> Basis:
    """Per configuration (and per source, and per printed row) the first positive figure of each metric: what a claim
    of that configuration is recomputed from. Grouped by Polars: a loop over 100,000 rows took 1.7 s."""
    results = pairing.with_config_keys(results)
    keys = pairing.config_keys(results, with_source=False)
    value = pl.col("value").cast(pl.Float64)
    rows = results.filter(pl.col("metric").is_in(metrics), value > 0, value.is_not_nan())  # NaN sorts above 0
    if "workload" in rows.columns:  # an RL step's throughput is no training rate: nothing is recomputed from it
        rl_rate = (pl.col("workload").fill_null("") == pairing.RL_WORKLOAD) \
            & pl.col("metric").is_in(["tokens_per_s_per_device", "tokens_per_s"])
        rows = rows.filter(~rl_rate)
    out: list[dict[tuple[Any, ...], dict[str, tuple[float, str]]]] = []
    for extra in (["source_id", "locator"], ["source_id"], []):
        firsts = (rows.group_by([*keys, *extra, "metric"], maintain_order=True)
                  .agg(value.first(), pl.col("id").first(), pl.col("source_id").first().alias("_src"),
                       pl.col("locator").first().alias("_loc"), pl.col("_derived").first()))
        index: dict[tuple[Any, ...], dict[str, tuple[float, str]]] = {}
        for *key, metric, first, rid, src, loc, derived in firsts.iter_rows():
            index.setdefault(tuple(key), {})[metric] = (float(first), pairing.describe_input(rid, src, loc, derived))
        out.append(index)
    return Basis(keys, *out)


def with_inputs(row: dict[str, Any], refs: Mapping[str, str], tier: int, order: Sequence[str]) -> dict[str, Any]:
    """An audit row with `inputs` (the figure its recomputation started from, the first of `order` it has) and,
    when that figure is another source's, a reason that says so."""
    used = next((refs[m] for m in order if m in refs), None)
    row["inputs"] = used if row["verdict"] != "unchecked" or row["recomputed"] is not None else None
    if tier == 2 and used is not None:
        note = f"its own source prints no figure for this configuration; checked against {used} (cross-source " \
            "pairing asked)"
        row["reason"] = f"{note}; {row['reason']}" if row.get("reason") else note
        row["explanation"] = row["reason"]
    return row


def audit_utilization(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                      rule: audit.AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per mfu/hfu claim: reported, recomputed, rel_diff, verdict, the reproducing convention, why."""
    results = pairing.with_config_keys(results)
    basis = figures_by_config(results, [audit.THROUGHPUT_METRIC, audit.CLAIM_METRIC])
    shapes = {r["id"]: r for r in models.iter_rows(named=True)}
    accels = {r["id"]: r for r in accelerators.iter_rows(named=True)}

    def audit_one(claim: dict[str, Any]) -> dict[str, Any]:
        values, refs, tier = basis.for_claim(claim, rule.cross_source)
        return with_inputs(_audit_one(claim, values, shapes, accels, rule), refs, tier,
                           (audit.THROUGHPUT_METRIC, audit.CLAIM_METRIC))

    claims = results.filter(pl.col("metric").is_in(CLAIM_METRICS))
    return once_per_distinct(claims, audit_one, AUDIT_COLUMNS)


def _audit_one(claim: Mapping[str, Any], basis: Mapping[str, float], shapes: Mapping[str, Mapping[str, Any]],
               accels: Mapping[str, Mapping[str, Any]], rule: audit.AuditRule) -> dict[str, Any]:
    reported, factor = float(claim["value"]), HFU_FACTOR if claim["metric"] == "hfu" else 1.0
    tps, tflops = basis.get(audit.THROUGHPUT_METRIC), basis.get(audit.CLAIM_METRIC)
    peaks = peaks_for(accels.get(claim["accelerator_id"] or ""), claim["precision"])
    shape, seq = shape_at(shapes.get(claim["model_id"] or ""), claim["seq_len"])
    recomputed, convention, reason, verdict = None, None, None, "unchecked"
    if isinstance(peaks, str):
        reason = peaks
    elif tps is None and tflops is None:
        reason = "no tokens/s or model TFLOPS row of the same source and configuration to recompute it from"
    elif tps is not None and shape is None:
        reason = "the model is not in the catalog with a shape, so its FLOPs per token are unknown"
    else:
        found = [(c, _value(c, tps, tflops, shape, seq, peaks) * factor) for c in conventions(claim["precision"])
                 if tps is not None or c.name == DEFAULT]
        if factor != 1.0:  # no activation recompute: the hardware does the model's FLOPs, HFU = MFU
            found += [(Convention(f"{c.name}+no-recompute", f"{c.title}, no activation recompute (HFU = MFU)",
                                  c.flops, c.peak_precision), v / factor) for c, v in list(found)]
        recomputed = found[0][1]
        within = [(c, v) for c, v in found if abs(audit.relative_difference(reported, v)) <= rule.tolerance]
        if within and within[0][0].name == DEFAULT:
            verdict, convention = "consistent", DEFAULT
        elif within:
            best, value = within[0]
            verdict, convention = "other convention", best.name
            reason = (f"the default gives {recomputed:.4f}; {best.title} gives {value:.4f}, within "
                      f"{rule.tolerance:.0%} of the claimed {reported:.4f}")
        else:
            verdict = "inconsistent"
            reason = (f"recomputed {recomputed:.4f} from {_basis(tps, tflops)}, {audit.relative_difference(reported, recomputed):+.1%} "
                      f"off the claimed {reported:.4f}, and no known FLOPs or peak convention comes within {rule.tolerance:.0%}")
    rel = audit.relative_difference(reported, recomputed) if recomputed else None
    peak = peaks["_stated"] if isinstance(peaks, dict) else None
    plausibility, note = plausibility_of(claim, peaks, rule)
    assumed = audit.seq_assumed(seq) if recomputed is not None and tps is not None and not claim["seq_len"] else None
    reason = "; ".join(r for r in (reason, assumed, note) if r) or None
    return {"claim_id": claim.get("id"), "source_id": claim["source_id"], "model_id": claim["model_id"],
            "accelerator_id": claim["accelerator_id"], "n_devices": claim["n_devices"],
            "workload": claim.get("workload"), "precision": claim["precision"], "seq_len": claim["seq_len"],
            "metric": claim["metric"], "reported": reported, "recomputed": recomputed, "unit": "fraction",
            "rel_diff": rel, "tolerance": rule.tolerance, "peak_used": f"{peak:g} TFLOP/s" if peak else None,
            "verdict": verdict, "plausibility": plausibility, "formula": fl.FORMULA_TITLES.get(rule.formula, rule.formula),
            "mfu_at_stated_precision": reported if claim["metric"] == "mfu" else None,
            "tokens_per_s_per_device": tps, "explanation": reason or "", "convention": convention, "reason": reason,
            "inputs": None, "relation": _relation(claim["metric"], tps, tflops)}


def _relation(metric: str, tps: float | None, tflops: float | None) -> str:
    """The relation an MFU or HFU claim is recomputed by, from the basis it has."""
    basis = ("tokens_per_s_per_device x FLOPs per token / 1e12" if tps is not None
             else "model_tflops_per_device" if tflops is not None else "model TFLOP/s")
    return f"{metric} = {basis} / dense peak at the precision" + (" x 4/3" if metric == "hfu" else "")


def plausibility_of(claim: Mapping[str, Any], peaks: Mapping[str, float] | str,
                    rule: audit.AuditRule) -> tuple[str, str | None]:
    """An MFU claim is judged as its TFLOPS twin is: implausible above the MFU ceiling, with the same reason (FP8
    named only when the accelerator has an FP8 peak that brings it under the ceiling). HFU counts recompute and
    is not judged ("")."""
    if claim["metric"] != "mfu":
        return "", None
    reported = float(claim["value"])
    if reported <= rule.mfu_ceiling:
        return "plausible", None
    if isinstance(peaks, str):
        return "implausible", f"{reported:.1%} exceeds the {rule.mfu_ceiling:.0%} ceiling"
    stated = claim["precision"] if claim["precision"] not in (None, "", "unstated") else "bf16"
    return "implausible", audit.implausible_reason(reported * peaks["_stated"], reported, str(stated),
                                                   peaks.get("fp8"), rule)


def _basis(tps: float | None, tflops: float | None) -> str:
    return f"{tps:,.0f} tokens/s/device" if tps is not None else f"{tflops:,.1f} model TFLOP/s/device"


def _value(c: Convention, tps: float | None, tflops: float | None, shape: fl.ModelShape | None, seq: int,
           peaks: Mapping[str, float]) -> float:
    peak = peaks[c.peak_precision or "_stated"]
    if tps is not None and shape is not None:
        return tps * c.flops(shape, seq) / 1e12 / peak
    return (tflops or 0.0) / peak


def peaks_for(acc: Mapping[str, Any] | None, precision: str | None) -> dict[str, float] | str:
    """{"_stated": dense peak at the stated precision (bf16 when unstated), "bf16": ..., "fp8": ... (those the
    accelerator has)}, or why there is none."""
    if acc is None:
        return "the accelerator is not in the catalog, so there is no peak to divide by"
    stated = precision if precision not in (None, "", "unstated") else "bf16"
    out: dict[str, float] = {}
    for name, prec in (("_stated", stated), ("bf16", "bf16"), ("fp8", "fp8")):
        try:
            out[name] = m.peak_tflops(acc, str(prec)).tflops
        except InvalidInput as exc:
            if name == "_stated":
                return str(exc)
    return out


def shape_at(row: Mapping[str, Any] | None, seq_len: Any) -> tuple[fl.ModelShape | None, int]:
    """The catalog model's shape and the sequence length (the claim's, else the model's); (None, 0) if unknown."""
    if row is None:
        return None, 0
    seq: Any = seq_len or row.get("seq_len")
    try:
        return fl.ModelShape.from_row(row), int(seq)
    except (InvalidInput, TypeError, ValueError):
        return None, 0
