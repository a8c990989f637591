"""The verdict of a recomputed claim, shared by the time-to-train and scaling audits.

A claim is recomputed under the default reading first, then under each known alternative (a convention). It is
consistent when the default comes within tolerance, "other convention" when only an alternative does (and the
reason names it), and inconsistent otherwise. A figure printed with few digits ("5 days", "1.2 minutes") is also
within tolerance when the recomputed figure rounds to it: half a unit of its last printed digit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

import polars as pl

from perfledger.calc import audit
from perfledger.calc import flops as fl

DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One recomputation of a claim: the convention's name, how it reads in a sentence, and the figure."""

    name: str
    title: str
    value: float


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: str
    recomputed: float | None
    convention: str | None
    reason: str | None


@lru_cache(maxsize=4096)  # asked once per candidate of every claim: the same few thousand printed figures
def half_last_digit(value: float) -> float:
    """Half a unit of the last printed digit: 5 -> 0.5, 1.2 -> 0.05, 0.957 -> 0.0005.

    >>> half_last_digit(137.0), half_last_digit(1.2)
    (0.5, 0.05)
    """
    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return 0.5 * 10.0 ** min(int(exponent), 0) if isinstance(exponent, int) else 0.0


def within(reported: float, recomputed: float, tolerance: float) -> bool:
    """|reported - recomputed| <= tolerance x recomputed, or no more than the printed rounding."""
    return abs(reported - recomputed) <= max(tolerance * abs(recomputed), half_last_digit(reported))


def judge(reported: float, candidates: Sequence[Candidate], tolerance: float,
          show: Callable[[float], str], basis: str) -> Judgement:
    """The verdict over candidates (the default first); `show` formats a figure with its unit, `basis` says what
    the default recomputation started from (for the reason of an inconsistent claim)."""
    if not candidates:
        return Judgement("unchecked", None, None, "nothing to recompute it from")
    default = candidates[0]
    hits = [c for c in candidates if within(reported, c.value, tolerance)]
    if hits and hits[0] is default:
        return Judgement("consistent", default.value, default.name, None)
    if hits:
        best = hits[0]
        return Judgement("other convention", default.value, best.name,
                         f"the default reading gives {show(default.value)}; {best.title} gives {show(best.value)}, "
                         f"within {tolerance:.0%} of the claimed {show(reported)}")
    diff = audit.relative_difference(reported, default.value)
    return Judgement("inconsistent", default.value, None,
                     f"recomputed {show(default.value)} from {basis}, {diff:+.1%} off the claimed {show(reported)}, "
                     f"and no known convention comes within {tolerance:.0%}")


def claim_row(claim: Mapping[str, Any], reported: float, judgement: Judgement, unit: str, rule: audit.AuditRule,
              *, tokens_per_s: float | None = None, relation: str | None = None) -> dict[str, Any]:
    """One row of the audit table (audit_mfu.AUDIT_COLUMNS) for a claim and its judgement."""
    rel = (audit.relative_difference(reported, judgement.recomputed)
           if judgement.recomputed not in (None, 0.0) else None)
    return {"claim_id": claim.get("id"), "source_id": claim.get("source_id"), "model_id": claim.get("model_id"),
            "accelerator_id": claim.get("accelerator_id"), "n_devices": claim.get("n_devices"),
            "workload": claim.get("workload"), "precision": claim.get("precision"), "seq_len": claim.get("seq_len"),
            "metric": claim.get("metric"), "reported": reported, "recomputed": judgement.recomputed, "unit": unit,
            "rel_diff": rel, "tolerance": rule.tolerance, "mfu_at_stated_precision": None, "peak_used": None,
            "verdict": judgement.verdict, "plausibility": "", "formula": fl.FORMULA_TITLES.get(rule.formula, rule.formula),
            "tokens_per_s_per_device": tokens_per_s, "explanation": judgement.reason or "",
            "convention": judgement.convention, "reason": judgement.reason, "inputs": None, "relation": relation}


def once_per_distinct(claims: pl.DataFrame, audit_one: Callable[[dict[str, Any]], dict[str, Any]],
                      schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """One audit row per claim, in the claims' order, with `audit_one` asked once per distinct claim: claims equal in
    every column but their id (the same printed figure of the same source, configuration and locator, as a store
    that holds a table many times over has) get the same verdict and inputs, and only claim_id tells them apart.
    `audit_one` receives the claim as a mapping with the first id of its group."""
    keys = [c for c in claims.columns if c != "id"]
    groups = (claims.with_row_index("_order").group_by(keys, maintain_order=True)
              .agg(pl.col("_order"), pl.col("id").alias("_ids")))
    rows = [audit_one({**claim, "id": claim["_ids"][0]}) for claim in groups.iter_rows(named=True)]
    audited = pl.DataFrame(rows, schema=dict(schema)).with_columns(groups["_order"], groups["_ids"])
    return (audited.explode("_order", "_ids").sort("_order")
            .with_columns(claim_id=pl.col("_ids").cast(schema["claim_id"])).select(list(schema)))
