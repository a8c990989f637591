"""Audit of claims: does a published TFLOP/s follow from its own tokens/s, and is it plausible at all?

Two checks per `model_tflops_per_device` claim:
1. consistency: recomputed = tokens_per_s_per_device (same source and configuration) x FLOPs per token / 1e12;
   rel_diff = (reported - recomputed) / recomputed; consistent when |rel_diff| <= tolerance; "other convention"
   when only another named FLOPs formula reproduces it (NVIDIA halved causal attention in 2025).
   The tokens/s row is looked for first in the claim's own printed row (same source, locator and configuration),
   then in the same configuration of the same source, and in other sources' rows of the same configuration only
   when the rule asks for it (cross_source; the explanation then says so). Every verdict names its input (inputs).
   A row printing step time, global batch, sequence length and devices gives a throughput (pairing.with_config_keys).
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
from perfledger.calc import pairing
from perfledger.errors import InvalidInput

DEFAULT_TOLERANCE = 0.02
DEFAULT_MFU_CEILING = 0.70
VERDICTS = ("consistent", "other convention", "inconsistent", "unchecked")
CLAIM_METRIC = "model_tflops_per_device"
RELATION = "model_tflops_per_device = tokens_per_s_per_device x FLOPs per token / 1e12"
THROUGHPUT_METRIC = "tokens_per_s_per_device"
MATCH_KEYS = ("source_id", *pairing.CONFIG_COLUMNS)
# what audit_claims reads of a result row (the _model/_accelerator keys are made from the ids and printed names)
INPUT_COLUMNS = ("id", "source_id", "model_id", "accelerator_id", "model_as_printed", "accelerator_as_printed",
                 *(c for c in pairing.CONFIG_COLUMNS if not c.startswith("_")),
                 "locator", "metric", "value", "unit")

AUDIT_SCHEMA: dict[str, pl.DataType] = {
    "claim_id": pl.Int64(), "source_id": pl.String(), "model_id": pl.String(), "accelerator_id": pl.String(),
    "n_devices": pl.Int64(), "workload": pl.String(), "precision": pl.String(), "seq_len": pl.Int64(),
    "metric": pl.String(),
    "reported": pl.Float64(), "recomputed": pl.Float64(), "unit": pl.String(), "rel_diff": pl.Float64(),
    "tolerance": pl.Float64(), "mfu_at_stated_precision": pl.Float64(), "peak_used": pl.String(),
    "verdict": pl.String(), "plausibility": pl.String(), "formula": pl.String(), "tokens_per_s_per_device": pl.Float64(),
    "explanation": pl.String(), "inputs": pl.String(),
}


@dataclass(frozen=True, slots=True)
class AuditRule:
    tolerance: float = DEFAULT_TOLERANCE
    mfu_ceiling: float = DEFAULT_MFU_CEILING
    formula: str = fl.DEFAULT_FORMULA
    cross_source: bool = False  # also pair a claim with other sources' rows of the same configuration

    def describe(self) -> str:
        across = "; other sources' rows of the same configuration used when its own source has none" \
            if self.cross_source else "; paired within the claim's own source only"
        return (f"consistent when |reported - recomputed| / recomputed <= {self.tolerance:.0%} "
                f"(FLOPs: {fl.FORMULA_TITLES.get(self.formula, self.formula)}); implausible when MFU at the "
                f"stated precision (bf16 when unstated) > {self.mfu_ceiling:.0%}" + across)


def relative_difference(reported: float, recomputed: float) -> float:
    """(reported - recomputed) / recomputed      (fraction; positive = the claim is higher)

    >>> round(relative_difference(836, 835.6), 4)
    0.0005
    """
    return (reported - recomputed) / recomputed


def audit_claims(results: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
                 rule: AuditRule = AuditRule()) -> pl.DataFrame:
    """One row per model-TFLOPS claim with reported, recomputed, rel_diff, tolerance, verdict and why."""
    results = pairing.with_config_keys(results)
    claims = results.filter(pl.col("metric") == CLAIM_METRIC)
    if claims.height == 0:
        return pl.DataFrame(schema=AUDIT_SCHEMA)
    claims = _with_flops(claims.with_row_index("_row").with_columns(pl.col("value").cast(pl.Float64)), models, rule)
    throughput = results.filter((pl.col("metric") == THROUGHPUT_METRIC) & (pl.col("value") > 0)
                                & pl.col("value").is_finite()).with_columns(pl.col("value").cast(pl.Float64))
    own = _closest_same_config(claims, throughput, pairing.config_keys(results, with_source=False),
                               rule.cross_source)
    frame = (claims.join(own, on="_row", how="left")
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
        for column, formula in columns.items()).with_columns(
        pl.Series("_seq_assumed", [None if s else (flops.shapes.get(m or "") or {}).get("seq_len")
                                   for m, s in pairs.iter_rows()], dtype=pl.Int64))
    return claims.join(table, on=["model_id", "seq_len"], how="left", nulls_equal=True, maintain_order="left")


def _recomputed(tps: str, f: str = "_f") -> pl.Expr:
    """metrics.model_tflops as an expression: tokens/s/device x FLOPs per token / 1e12."""
    return pl.col(tps) * pl.col(f) / 1e12


def _abs_rel_diff(tps: str, f: str = "_f") -> pl.Expr:
    """|relative_difference(reported, recomputed)|."""
    return ((pl.col("value") - _recomputed(tps, f)) / _recomputed(tps, f)).abs()


def _closest_same_config(claims: pl.DataFrame, throughput: pl.DataFrame, keys: list[str],
                         cross_source: bool) -> pl.DataFrame:
    """Per claim with tokens/s rows of its configuration (equal on every key; null matches null): the closest value
    within the nearest tier that has one (0: its own printed row, same source and locator; 1: its own source;
    2: another source, only when cross_source), how many rows that tier holds and the row used
    (_row, _n_same, _tps_same, _tier, _id_same, _src_same, _loc_same, _derived_same)."""
    groups = (throughput.group_by([*keys, "source_id", "locator", "value"], maintain_order=True)
              .agg(pl.len().alias("_count"), pl.col("id").first().alias("_id_same"),
                   pl.col("_derived").first().alias("_derived_same"))
              .rename({"value": "_tps_same", "source_id": "_src_same", "locator": "_loc_same"}))
    candidates = (claims.filter(pl.col("_f").is_not_null()).select("_row", "value", "_f", "source_id", "locator", *keys)
                  .join(groups, on=keys, how="inner", nulls_equal=True, maintain_order="left")
                  .with_columns(_tier=pl.when(pl.col("_src_same") != pl.col("source_id")).then(2)
                                .when((pl.col("_loc_same") == pl.col("locator")).fill_null(False)).then(0)
                                .otherwise(1)))
    if not cross_source:
        candidates = candidates.filter(pl.col("_tier") < 2)
    candidates = candidates.filter(pl.col("_tier") == pl.col("_tier").min().over("_row"))
    counts = candidates.group_by("_row").agg(pl.col("_count").sum().alias("_n_same"))
    return (_first_closest(candidates, "_tps_same")
            .select("_row", "_tps_same", "_tier", "_id_same", "_src_same", "_loc_same", "_derived_same")
            .join(counts, on="_row"))


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
    tps = pl.col("_tps_same")
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
               .otherwise(pl.lit("unchecked")))
    inputs = pl.format("result {} ({}{}{})", pl.col("_id_same"), pl.col("_src_same"),
                       pl.when(pl.col("_loc_same").is_not_null()).then(pl.lit(", ") + pl.col("_loc_same"))
                       .otherwise(pl.lit("")),
                       pl.when(pl.col("_derived_same")).then(pl.lit(_DERIVED)).otherwise(pl.lit("")))
    assumed = pl.when(pl.col("_seq_assumed").is_not_null()).then(
        pl.format("; {}", seq_assumed_expr())).otherwise(pl.lit(""))
    return frame.with_columns(verdict=verdict, plausibility=_plausibility(rule), peak_used=pl.col("_peak_used"),
                              inputs=pl.when(pl.col("_tps_same").is_not_null()).then(inputs + assumed))


def seq_assumed(seq: Any) -> str:
    """What a verdict says when the row prints no sequence length and the catalog model's is used."""
    return f"seq_len {seq} assumed: the row prints none (the catalog model's)"


def seq_assumed_expr() -> pl.Expr:
    return pl.format("seq_len {} assumed: the row prints none (the catalog model's)", pl.col("_seq_assumed"))


_DERIVED = "; tokens/s derived from its step time, global batch, sequence length and devices"


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


_EXPLAIN_COLUMNS = ("verdict", "_model", "_f", "_tps_same", "_n_same", "_other", "value", "_f_other",
                    "_tier", "_src_same", "recomputed", "_peak_note",
                    "plausibility", "mfu_at_stated_precision", "_precision_used", "_fp8_peak", "workload",
                    "_seq_assumed")
PEFT_WORKLOADS = ("lora_finetune",)


def _explanations(frame: pl.DataFrame, rule: AuditRule) -> Iterator[str]:
    """Why each verdict: the consistency notes, then the plausibility one, joined by "; "."""
    f_other = pl.lit(None, dtype=pl.Float64)
    for name in _other_formulas(rule):
        f_other = pl.when(pl.col("_other") == name).then(pl.col(f"_f_{name}")).otherwise(f_other)
    if "workload" not in frame.columns:  # a results frame may leave it out: no workload-specific note then
        frame = frame.with_columns(workload=pl.lit(None, dtype=pl.String))
    narrow = frame.select(pl.col(c) if c != "_f_other" else f_other.alias(c) for c in _EXPLAIN_COLUMNS)
    for (verdict, model_id, f, tps_same, n_same, other, value, f_other, tier, src_same, recomputed, peak_note,
         plausibility, util, precision, fp8, workload, assumed) in narrow.iter_rows():
        notes: list[str] = []
        if f is None:
            notes.append(no_architecture(model_id))
        elif tps_same is not None:
            if assumed is not None:
                notes.append(seq_assumed(assumed))
            if tier == 2:
                notes.append(f"its own source prints no tokens/s for this configuration; checked against {src_same} "
                             "(cross-source pairing asked)")
            if n_same > 1:
                notes.append(f"{n_same} tokens/s rows share this configuration; the closest was used")
            if verdict == "other convention":
                diff = relative_difference(value, m.model_tflops(tps_same, f_other))
                notes.append(f"reproduced within {abs(diff):.1%} by the '{fl.FORMULA_TITLES[other]}' FLOPs count "
                             "instead")
            if verdict == "inconsistent" and workload in PEFT_WORKLOADS and recomputed:
                notes.append(_peft_reason(value / recomputed))
        else:
            notes.append("no tokens/s figure for the same configuration in its own source"
                         + (" or any other" if rule.cross_source else " (other sources not asked: --cross-source)"))
        if peak_note is not None:
            notes.append(peak_note)
        elif plausibility == "implausible":
            notes.append(implausible_reason(value, util, precision, fp8, rule))
        yield "; ".join(notes)


def no_architecture(model_id: str | None) -> str:
    """Why a claim's FLOPs are unknown: a catalog model with no shape, a printed name no catalog row claims
    ("as printed: NAME", pairing's model key), or no model at all (never Python's None).

    >>> no_architecture("zoo-1b")
    "no architecture for model 'zoo-1b' in the catalog: FLOPs unknown"
    >>> no_architecture("as printed: gemma4-26b")
    "model 'gemma4-26b' is not in the catalog: FLOPs unknown (python -m perfledger resolve list)"
    """
    if model_id is None:
        return "no model named: FLOPs unknown"
    if model_id.startswith(AS_PRINTED):
        return (f"model {model_id.removeprefix(AS_PRINTED)!r} is not in the catalog: FLOPs unknown "
                "(python -m perfledger resolve list)")
    return f"no architecture for model {model_id!r} in the catalog: FLOPs unknown"


AS_PRINTED = "as printed: "  # pairing's key of a name no catalog row claims


def _peft_reason(ratio: float) -> str:
    """Why a LoRA/PEFT claim reads low against a full-training FLOPs count."""
    return (f"reported / recomputed = {ratio:.2f}: a LoRA/PEFT run computes no weight gradients for its frozen "
            "weights, so its source counts about 4 FLOPs per parameter per token (forward 2 + activation "
            "gradients 2) where full training counts 6; 4/6 = 0.67")


def implausible_reason(value: float, util: float, precision: str, fp8_peak: float | None, rule: AuditRule) -> str:
    """Why a figure (TFLOP/s, `util` of the stated peak) is implausible; FP8 is named as a way out only when the
    accelerator has an FP8 peak and the figure sits at or under the ceiling of it.

    >>> implausible_reason(328, 328 / 459, "bf16", None, AuditRule())
    '71.5% of the dense bf16 peak exceeds the 70% ceiling; no FP8 peak that would explain it (sparsity or a different FLOP count?)'
    """
    reason = f"{util:.1%} of the dense {precision} peak exceeds the {rule.mfu_ceiling:.0%} ceiling"
    if precision == "fp8":
        return reason + "; check the FLOP count (recompute counted as model FLOPs?) or a sparse peak"
    if fp8_peak is None:
        return reason + "; no FP8 peak that would explain it (sparsity or a different FLOP count?)"
    if value / fp8_peak > rule.mfu_ceiling:
        return reason + f"; even the FP8 dense peak gives {value / fp8_peak:.1%} (a sparse peak or another FLOP count?)"
    return reason + f"; plausible only in FP8 ({value / fp8_peak:.1%} of the FP8 dense peak)"


def _fmt_int(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{int(value):,}"
