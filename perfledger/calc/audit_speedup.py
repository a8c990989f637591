"""Audit of a speedup a published table prints against its own baseline row: the row's throughput over the
throughput of the row of the same source and model that prints a speedup of 1 (the table's baseline), each
throughput the same printed metric. A speedup over fewer nodes of the same setup is a scaling claim
(calc/audit_scaling.py), never judged here; a source with no single baseline row for the model leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl

from perfledger.calc import audit, audit_mfu, pairing
from perfledger.calc.audit_judge import DEFAULT, Candidate, claim_row, judge

CLAIM_METRIC = "relative_throughput"
THROUGHPUTS = ("tokens_per_s_per_device", "tokens_per_s", "samples_per_s")  # the figure a speedup is a ratio of
TOTAL = "total throughput"  # the other reading when the two rows run on different device counts
DEFAULT_RULE = audit.AuditRule()


def audit_speedups(results: pl.DataFrame, rule: audit.AuditRule = DEFAULT_RULE) -> pl.DataFrame:
    """One row per speedup checked against its table's baseline row (audit_mfu.AUDIT_COLUMNS)."""
    frame = pairing.with_config_keys(results).filter(~pl.col("_derived"))
    if "source_id" not in frame.columns or frame.is_empty():
        return pl.DataFrame(schema=audit_mfu.AUDIT_COLUMNS)
    frame = frame.filter(pl.col("source_id").is_not_null(), pl.col("value").cast(pl.Float64) > 0)
    keys = ["source_id", "locator", *pairing.config_keys(frame, with_source=False)]
    frame = frame.with_columns(_row=pl.struct(keys).rank("dense"))
    rows = frame.to_dicts()
    return pl.DataFrame(list(_verdicts(rows, rule)), schema=audit_mfu.AUDIT_COLUMNS)


def _verdicts(rows: list[dict[str, Any]], rule: audit.AuditRule) -> Iterator[dict[str, Any]]:
    figures: dict[Any, dict[str, dict[str, Any]]] = {}
    for r in rows:
        figures.setdefault(r["_row"], {}).setdefault(r["metric"], r)
    speedups = [r for r in rows if r["metric"] == CLAIM_METRIC and not pairing.is_scaling_claim(r)]
    for claim in speedups:
        bases = {b["_row"] for b in speedups if _is_baseline_of(b, claim)}
        if len(bases) != 1 or claim["_row"] in bases:
            continue
        base, own = figures[bases.pop()], figures[claim["_row"]]
        metric = next((m for m in THROUGHPUTS if m in own and m in base), None)
        if metric is not None:
            yield _verdict(claim, own[metric], base[metric], rule)


def _is_baseline_of(row: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """A row of the same source and model that prints a speedup of exactly 1: the table's baseline."""
    return (float(row["value"]) == 1.0 and row["source_id"] == claim["source_id"]
            and row["_model"] is not None and row["_model"] == claim["_model"])


def _verdict(claim: Mapping[str, Any], own: Mapping[str, Any], base: Mapping[str, Any],
             rule: audit.AuditRule) -> dict[str, Any]:
    metric, reported = own["metric"], float(claim["value"])
    ratio = float(own["value"]) / float(base["value"])
    candidates = [Candidate(DEFAULT, f"{metric} / baseline row's {metric}", ratio)]
    n, n_base = own.get("n_devices"), base.get("n_devices")
    if metric.endswith("_per_device") and n and n_base and n != n_base:
        candidates.append(Candidate(TOTAL, "the ratio of all-device throughputs", ratio * n / n_base))
    shown = f"{metric} {float(own['value']):,.6g} over the baseline row's {float(base['value']):,.6g}"
    judgement = judge(reported, candidates, rule.tolerance, lambda v: f"{v:,.4g}x", shown)
    row = claim_row(claim, reported, judgement, "x", rule)
    inputs = "; ".join(f"{pairing.describe_input(r['id'], r['source_id'], r.get('locator'))}: {metric} "
                       f"{float(r['value']):,.6g}" for r in (own, base))
    return row | {"relation": f"{CLAIM_METRIC} = {metric} / {metric} of the baseline row (the row printing 1x)",
                  "inputs": inputs}
