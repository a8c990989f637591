"""Audit of claims: does a published TFLOP/s follow from its own tokens/s, and is it plausible at all?

Two checks per `model_tflops_per_device` claim:
1. consistency: recomputed = tokens_per_s_per_device (same source and configuration) x FLOPs per token / 1e12;
   rel_diff = (reported - recomputed) / recomputed; consistent when |rel_diff| <= tolerance; "other convention"
   when only another named FLOPs formula reproduces it (NVIDIA halved causal attention in 2025).
   Without a tokens/s row of its own, the claim is matched against every other source's tokens/s row for the
   same model and accelerator, and the rows that reproduce it are named (the "797 per H100" case).
2. plausibility: mfu = reported / dense peak of the stated precision (bf16 when unstated); above the ceiling
   the claim is "implausible" and the explanation says which precision would make it plausible.
The two answers are separate columns: a claim can be consistent with its own tokens/s and still implausible.

The matching is vectorized (joins over the claims, not a loop over them): a store of 100,000 results holds
tens of thousands of claims, and a configuration can have hundreds of tokens/s rows. Ties go to the first row
in stored order, and a tokens/s figure that is not positive and finite never matches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.errors import InvalidInput

DEFAULT_TOLERANCE = 0.02
DEFAULT_MFU_CEILING = 0.70
VERDICTS = ("consistent", "other convention", "inconsistent", "unchecked")
CLAIM_METRIC = "model_tflops_per_device"
THROUGHPUT_METRIC = "tokens_per_s_per_device"
MATCH_KEYS = ("source_id", "model_id", "accelerator_id", "n_devices", "seq_len", "global_batch", "micro_batch",
              "precision", "framework_version", "workload", "strategy", "tp", "pp", "cp", "ep")

INPUT_COLUMNS = ("id", *MATCH_KEYS, "metric", "value", "unit")  # what audit_claims reads of a result row

AUDIT_SCHEMA: dict[str, pl.DataType] = {
    "claim_id": pl.Int64(), "source_id": pl.String(), "model_id": pl.String(), "accelerator_id": pl.String(),
    "n_devices": pl.Int64(), "workload": pl.String(), "precision": pl.String(), "seq_len": pl.Int64(),
    "metric": pl.String(),
    "reported": pl.Float64(), "recomputed": pl.Float64(), "unit": pl.String(), "rel_diff": pl.Float64(),
    "tolerance": pl.Float64(), "mfu_at_stated_precision": pl.Float64(), "peak_used": pl.String(),
    "verdict": pl.String(), "plausibility": pl.String(), "formula": pl.String(), "tokens_per_s_per_device": pl.Float64(),
    "explanation": pl.String(),
}


@dataclass(frozen=True, slots=True)
class AuditRule:
    tolerance: float = DEFAULT_TOLERANCE
    mfu_ceiling: float = DEFAULT_MFU_CEILING
    formula: str = fl.DEFAULT_FORMULA

    def describe(self) -> str:
        return (f"consistent when |reported - recomputed| / recomputed <= {self.tolerance:.0%} "
                f"(FLOPs: {fl.FORMULA_TITLES.get(self.formula, self.formula)}); implausible when MFU at the "
                f"stated precision (bf16 when unstated) > {self.mfu_ceiling:.0%}")


def relative_difference(reported: float, recomputed: float) -> float:
    """(reported - recomputed) / recomputed      (fraction; positive = the claim is higher)

    >>> round(relative_difference(836, 835.6), 4)
    0.0005
    """
    return (reported - recomputed) / recomputed


def audit_claims(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                 rule: AuditRule = AuditRule()) -> pl.DataFrame:
    """One row per model-TFLOPS claim with reported, recomputed, rel_diff, tolerance, verdict and why."""
    claims = results.filter(pl.col("metric") == CLAIM_METRIC)
    if claims.height == 0:
        return pl.DataFrame(schema=AUDIT_SCHEMA)
    keys = [k for k in MATCH_KEYS if k in results.columns]
    claims = _with_flops(claims.with_row_index("_row").with_columns(pl.col("value").cast(pl.Float64)), models, rule)
    throughput = results.filter((pl.col("metric") == THROUGHPUT_METRIC) & (pl.col("value") > 0)
                                & pl.col("value").is_finite()).with_columns(pl.col("value").cast(pl.Float64))
    own = _closest_same_config(claims, throughput, keys)
    elsewhere = _closest_elsewhere(claims.join(own, on="_row", how="anti"), throughput, rule)
    frame = (claims.join(own, on="_row", how="left").join(elsewhere, on="_row", how="left")
             .join(_peaks(claims, accelerators), on=["accelerator_id", "precision"], how="left", nulls_equal=True)
             .sort("_row"))
    frame = _verdicts(frame, rule)
    out = frame.with_columns(
        pl.Series("explanation", list(_explanations(frame, rule)), dtype=pl.String),
        claim_id=pl.col("id"), reported=pl.col("value"), tolerance=pl.lit(rule.tolerance),
        formula=pl.lit(fl.FORMULA_TITLES.get(rule.formula, rule.formula)),
    )
    return out.select(pl.col(name).cast(dtype) if name in out.columns else pl.lit(None, dtype=dtype).alias(name)
                      for name, dtype in AUDIT_SCHEMA.items())


def _other_formulas(rule: AuditRule) -> list[str]:
    return [name for name in fl.FORMULAS if name != rule.formula]


class _Flops:
    """FLOPs per token of a catalog model (None when its shape is unknown); asked once per distinct model and
    sequence length, since thousands of claims share a few models."""

    def __init__(self, shapes: Mapping[str, Mapping[str, Any]]) -> None:
        self.shapes = shapes

    def per_token(self, model_id: str | None, seq_len: Any, formula: str) -> float | None:
        shape_row = self.shapes.get(model_id or "")
        if shape_row is None:
            return None
        seq = seq_len or shape_row.get("seq_len")
        if seq is None:
            return None
        try:
            return fl.flops_per_token(fl.ModelShape.from_row(shape_row), int(seq), formula)
        except (InvalidInput, TypeError, ValueError):
            return None


def _with_flops(claims: pl.DataFrame, models: pl.DataFrame, rule: AuditRule) -> pl.DataFrame:
    """Adds _f (FLOPs per token under the rule's formula) and _f_<name> for every other formula."""
    flops = _Flops({row["id"]: row for row in models.iter_rows(named=True)})
    pairs = claims.select("model_id", "seq_len").unique(maintain_order=True)
    columns = {"_f": rule.formula} | {f"_f_{name}": name for name in _other_formulas(rule)}
    table = pairs.with_columns(
        pl.Series(column, [flops.per_token(m, s, formula) for m, s in pairs.iter_rows()], dtype=pl.Float64)
        for column, formula in columns.items())
    return claims.join(table, on=["model_id", "seq_len"], how="left", nulls_equal=True, maintain_order="left")


def _recomputed(tps: str, f: str = "_f") -> pl.Expr:
    """metrics.model_tflops as an expression: tokens/s/device x FLOPs per token / 1e12."""
    return pl.col(tps) * pl.col(f) / 1e12


def _abs_rel_diff(tps: str, f: str = "_f") -> pl.Expr:
    """|relative_difference(reported, recomputed)|."""
    return ((pl.col("value") - _recomputed(tps, f)) / _recomputed(tps, f)).abs()


def _closest_same_config(claims: pl.DataFrame, throughput: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per claim with tokens/s rows equal on every MATCH_KEYS column (null matches null): the closest value and
    how many rows share the configuration (_row, _n_same, _tps_same)."""
    groups = throughput.group_by(keys, maintain_order=True).agg(
        pl.len().alias("_n_same"), pl.col("value").unique(maintain_order=True).alias("_tps_same"))
    candidates = (claims.filter(pl.col("_f").is_not_null()).select("_row", "value", "_f", *keys)
                  .join(groups, on=keys, how="inner", nulls_equal=True, maintain_order="left")
                  .explode("_tps_same"))
    return _first_closest(candidates, "_tps_same").select("_row", "_n_same", "_tps_same")


def _closest_elsewhere(claims: pl.DataFrame, throughput: pl.DataFrame, rule: AuditRule) -> pl.DataFrame:
    """Per claim without a tokens/s row of its own: the closest row of any source for the same model and
    accelerator that reproduces it within tolerance, and how many rows do (_row, _n_else, _tps_else, ...)."""
    rows = (throughput.filter(pl.col("model_id").is_not_null() & pl.col("accelerator_id").is_not_null())
            .group_by("model_id", "accelerator_id", "value", "source_id", "n_devices", maintain_order=True)
            .agg(pl.len().alias("_count"))
            .rename({"value": "_tps_else", "source_id": "_source_else", "n_devices": "_devices_else"}))
    within = (claims.filter(pl.col("_f").is_not_null()).select("_row", "value", "_f", "model_id", "accelerator_id")
              .join(rows, on=["model_id", "accelerator_id"], how="inner", maintain_order="left")
              .filter(_abs_rel_diff("_tps_else") <= rule.tolerance))
    counts = within.group_by("_row").agg(pl.col("_count").sum().alias("_n_else"))
    best = _first_closest(within, "_tps_else").select("_row", "_tps_else", "_source_else", "_devices_else")
    return best.join(counts, on="_row")


def _first_closest(candidates: pl.DataFrame, tps: str) -> pl.DataFrame:
    """The candidate row nearest to each claim (first in stored order on a tie)."""
    return (candidates.with_columns(_abs=_abs_rel_diff(tps)).sort("_row", "_abs", maintain_order=True)
            .unique("_row", keep="first", maintain_order=True))


def _peaks(claims: pl.DataFrame, accelerators: pl.DataFrame) -> pl.DataFrame:
    """Per (accelerator, stated precision): the dense peak used for MFU, or why there is none, and the FP8 peak."""
    accels = {row["id"]: row for row in accelerators.iter_rows(named=True)}
    pairs = claims.select("accelerator_id", "precision").unique(maintain_order=True)
    rows = [_peak_row(accels.get(acc or ""), stated) for acc, stated in pairs.iter_rows()]
    schema = {"_peak": pl.Float64, "_peak_used": pl.String, "_peak_note": pl.String, "_precision_used": pl.String,
              "_fp8_peak": pl.Float64}
    return pairs.hstack(pl.DataFrame(rows, schema=schema, orient="row"))


def _peak_row(acc: Mapping[str, Any] | None, stated_precision: str | None) -> tuple[Any, ...]:
    if acc is None:
        return None, None, "accelerator not in the catalog: MFU not checked", None, None
    stated = stated_precision or "unstated"
    precision = "bf16" if stated in ("unstated", "", None) else stated
    try:
        peak = m.peak_tflops(acc, precision)
    except InvalidInput as exc:
        return None, None, f"MFU not checked: {exc}", precision, None
    assumed = " (assumed: precision unstated)" if precision != stated else ""
    try:
        fp8 = m.peak_tflops(acc, "fp8").tflops
    except InvalidInput:
        fp8 = None
    return peak.tflops, peak.describe() + assumed, None, precision, fp8


def _verdicts(frame: pl.DataFrame, rule: AuditRule) -> pl.DataFrame:
    """recomputed, rel_diff, verdict, the other convention that reproduces an inconsistent claim, and MFU."""
    tps = pl.coalesce("_tps_same", "_tps_else")
    recomputed = tps * pl.col("_f") / 1e12
    other = pl.lit(None, dtype=pl.String)
    for name in reversed(_other_formulas(rule)):  # the first formula (in FORMULAS order) that reproduces it wins
        other = pl.when(_abs_rel_diff("_tps_same", f"_f_{name}") <= rule.tolerance).then(pl.lit(name)).otherwise(other)
    frame = frame.with_columns(
        tokens_per_s_per_device=tps, recomputed=recomputed,
        rel_diff=(pl.col("value") - recomputed) / recomputed, _other=other,
        mfu_at_stated_precision=pl.col("value") / pl.col("_peak"),
    )
    verdict = (pl.when(pl.col("_f").is_null()).then(pl.lit("unchecked"))
               .when(pl.col("_tps_same").is_not_null()).then(
                   pl.when(pl.col("rel_diff").abs() <= rule.tolerance).then(pl.lit("consistent"))
                   .when(pl.col("_other").is_not_null()).then(pl.lit("other convention"))
                   .otherwise(pl.lit("inconsistent")))
               .when(pl.col("_tps_else").is_not_null()).then(pl.lit("consistent"))
               .otherwise(pl.lit("unchecked")))
    return frame.with_columns(verdict=verdict, plausibility=_plausibility(rule),
                              peak_used=pl.col("_peak_used"))


def _plausibility(rule: AuditRule) -> pl.Expr:
    """unchecked without a peak, plausible at or below the MFU ceiling, else implausible (over _peak and
    mfu_at_stated_precision)."""
    return (pl.when(pl.col("_peak").is_null()).then(pl.lit("unchecked"))
            .when(pl.col("mfu_at_stated_precision") <= rule.mfu_ceiling).then(pl.lit("plausible"))
            .otherwise(pl.lit("implausible")))


def implausible_ids(claims: pl.DataFrame, accelerators: pl.DataFrame, rule: AuditRule = AuditRule()) -> list[int]:
    """The ids of the claims (id, accelerator_id, precision, value of model-TFLOPS rows) that audit_claims calls
    implausible: plausibility needs only the claim and its peak, so a caller can audit just these."""
    if claims.height == 0:
        return []
    frame = (claims.join(_peaks(claims, accelerators), on=["accelerator_id", "precision"], how="left",
                         nulls_equal=True, maintain_order="left")
             .with_columns(mfu_at_stated_precision=pl.col("value").cast(pl.Float64) / pl.col("_peak")))
    return [int(i) for i in frame.filter(_plausibility(rule) == "implausible")["id"].to_list()]


_EXPLAIN_COLUMNS = ("verdict", "model_id", "_f", "_tps_same", "_n_same", "_other", "value", "_f_other",
                    "_tps_else", "_source_else", "_devices_else", "_n_else", "recomputed", "_peak_note",
                    "plausibility", "mfu_at_stated_precision", "_precision_used", "_fp8_peak", "workload")
PEFT_WORKLOADS = ("lora_finetune",)


def _explanations(frame: pl.DataFrame, rule: AuditRule) -> Iterator[str]:
    """Why each verdict: the consistency notes, then the plausibility one, joined by "; "."""
    f_other = pl.lit(None, dtype=pl.Float64)
    for name in _other_formulas(rule):
        f_other = pl.when(pl.col("_other") == name).then(pl.col(f"_f_{name}")).otherwise(f_other)
    if "workload" not in frame.columns:  # a results frame may leave it out: no workload-specific note then
        frame = frame.with_columns(workload=pl.lit(None, dtype=pl.String))
    narrow = frame.select(pl.col(c) if c != "_f_other" else f_other.alias(c) for c in _EXPLAIN_COLUMNS)
    for (verdict, model_id, f, tps_same, n_same, other, value, f_other, tps_else, source_else, devices_else,
         n_else, recomputed, peak_note, plausibility, util, precision, fp8, workload) in narrow.iter_rows():
        notes: list[str] = []
        if f is None:
            notes.append(f"no architecture for model {model_id!r} in the catalog: FLOPs unknown")
        elif tps_same is not None:
            if n_same > 1:
                notes.append(f"{n_same} tokens/s rows share this configuration; the closest was used")
            if verdict == "other convention":
                diff = relative_difference(value, m.model_tflops(tps_same, f_other))
                notes.append(f"reproduced within {abs(diff):.1%} by the '{fl.FORMULA_TITLES[other]}' FLOPs count "
                             "instead")
            if verdict == "inconsistent" and workload in PEFT_WORKLOADS and recomputed:
                notes.append(_peft_reason(value / recomputed))
        elif tps_else is not None:
            notes.append(
                f"the claim states no throughput of its own; it matches {source_else} at {_fmt_int(devices_else)} "
                f"devices ({tps_else:g} tokens/s/device -> {recomputed:.1f} TFLOP/s)"
                + (f", one of {n_else} matching rows" if n_else > 1 else ""))
        else:
            notes.append("no tokens/s figure for the same configuration, here or in any other source")
        if peak_note is not None:
            notes.append(peak_note)
        elif plausibility == "implausible":
            notes.append(_implausible_reason(value, util, precision, fp8, rule))
        yield "; ".join(notes)


def _peft_reason(ratio: float) -> str:
    """Why a LoRA/PEFT claim reads low against a full-training FLOPs count."""
    return (f"reported / recomputed = {ratio:.2f}: a LoRA/PEFT run computes no weight gradients for its frozen "
            "weights, so its source counts about 4 FLOPs per parameter per token (forward 2 + activation "
            "gradients 2) where full training counts 6; 4/6 = 0.67")


def _implausible_reason(value: float, util: float, precision: str, fp8_peak: float | None, rule: AuditRule) -> str:
    reason = f"{util:.0%} of the dense {precision} peak exceeds the {rule.mfu_ceiling:.0%} ceiling"
    if precision != "fp8":
        if fp8_peak is None:
            return reason + "; no FP8 peak that would explain it (sparsity or a different FLOP count?)"
        return reason + f"; plausible only in FP8 ({value / fp8_peak:.0%} of the FP8 dense peak)"
    return reason + "; check the FLOP count (recompute counted as model FLOPs?) or a sparse peak"


def _fmt_int(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{int(value):,}"
