"""The verdict of a run: how it compares with the published figure for the same setup, and why it differs.

Compared on tokens/s per device, which needs no FLOPs convention. Comparable rows are published rows of the run's
model, accelerator, precision and workload at its device count; where there is none, at the nearest device count
stated (named). Of those, the headline uses the run's framework family first, then the closest framework version
to the run's, else the newest; of one release's rows, the highest (a source listing recipe variants is held to its
best).

    ratio = run tokens/s per device / published tokens/s per device

The gap is split into what the ledger's own rows show: starting from the headline row, each step moves one field
(devices, global or micro batch, sequence length, framework version, precision, TP/PP/CP/EP) to the run's value
through a row of the same publisher that differs from the current one in that field alone; the rest is unexplained.

    part_i = (value_i - value_{i-1}) / published;   unexplained = (run - value_last) / published
    ratio  = 1 + sum(part_i) + unexplained
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfledger.calc import compare_rows as cr
from perfledger.calc import flops as fl
from perfledger.calc.conventions import conventions
from perfledger.calc.goodput import Goodput
from perfledger.errors import InvalidInput

COMPARE_METRIC = "tokens_per_s_per_device"
TFLOPS_METRIC = "model_tflops_per_device"
TFLOPS_TOLERANCE = 0.02
# The fields the gap walks along, in order; a row "differs in that field alone" on GAP_KEYS
GAP_FIELDS = ("n_devices", "global_batch", "micro_batch", "seq_len", "framework_version", "precision_recipe", "tp",
              "pp", "cp", "ep")
GAP_KEYS = GAP_FIELDS  # dp and gradient accumulation follow from devices and batch: not keys of their own

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Headline:
    """The run's own figures: tokens/s and model TFLOP/s per device, MFU against the named peak."""

    tokens_per_s_per_device: float | None
    model_tflops_per_device: float | None
    mfu: float | None
    peak_used: str | None
    flops_per_token: float | None = None
    flops_formula: str | None = None
    why_no_mfu: str | None = None
    log_mfu: float | None = None  # the log's own MFU, against its own peak
    log_peak: str | None = None  # that peak, named as the log's (a fallback where the log says so)
    time_to_train_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"tokens_per_s_per_device": self.tokens_per_s_per_device,
                "model_tflops_per_device": self.model_tflops_per_device, "mfu": self.mfu, "peak_used": self.peak_used,
                "flops_per_token": self.flops_per_token, "flops_formula": self.flops_formula,
                "why_no_mfu": self.why_no_mfu, "log_mfu": self.log_mfu, "log_peak": self.log_peak,
                "time_to_train_s": self.time_to_train_s}


@dataclass(frozen=True, slots=True)
class Comparable:
    """One published row the run is comparable with (same setup), with its TFLOP/s partner and audit verdict."""

    result_id: int
    source_id: str | None
    framework: str | None
    framework_version: str | None
    precision_recipe: str | None
    n_devices: int | None
    global_batch: int | None
    value: float
    ratio: float | None
    tflops: float | None = None
    tflops_result_id: int | None = None
    audit_verdict: str | None = None
    chosen: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"result_id": self.result_id, "source_id": self.source_id, "framework": self.framework,
                "framework_version": self.framework_version, "precision_recipe": self.precision_recipe,
                "n_devices": self.n_devices, "global_batch": self.global_batch, "metric": COMPARE_METRIC,
                "value": self.value, "ratio": self.ratio, "tflops": self.tflops,
                "tflops_result_id": self.tflops_result_id, "audit_verdict": self.audit_verdict, "chosen": self.chosen}


@dataclass(frozen=True, slots=True)
class Published:
    """The figure the headline compares with, and why that one."""

    result_id: int
    source_id: str | None
    value: float
    ratio: float
    why: str
    match: str  # "same model, accelerator, precision, workload and devices", or the nearest stated
    label: str = "published"

    def as_json(self) -> dict[str, Any]:
        return {"result_id": self.result_id, "source_id": self.source_id, "metric": COMPARE_METRIC,
                "value": self.value, "ratio": self.ratio, "why": self.why, "match": self.match}


@dataclass(frozen=True, slots=True)
class GapPart:
    cause: str
    share: float  # in ratio points: the parts, 1 and unexplained add up to the ratio
    inputs: tuple[int, ...]  # result ids

    def as_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "share": self.share, "inputs": list(self.inputs)}


@dataclass(frozen=True, slots=True)
class Gap:
    ratio: float
    parts: tuple[GapPart, ...]
    unexplained: float

    def as_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "formula": "ratio = 1 + sum(parts) + unexplained",
                "parts": [p.as_json() for p in self.parts], "unexplained": self.unexplained}


@dataclass(frozen=True, slots=True)
class TflopsSideBySide:
    """Model TFLOP/s of run and published row under the one FLOPs convention that reproduces the published figure."""

    convention: str
    title: str
    gflop_per_token: float
    run: float
    published: float
    ratio: float
    run_default: float | None  # the run's TFLOP/s under the default count, for the record
    default_gflop_per_token: float | None

    def describe(self) -> str:
        return (f"TFLOP/s side by side under one count, {self.title} ({self.gflop_per_token:,.1f} GFLOP per token): "
                f"run {self.run:,.1f} vs published {self.published:,.1f} ({self.ratio:.1%})"
                + (f"; the run's {self.run_default:,.1f} counts {self.default_gflop_per_token:,.1f} GFLOP per token"
                   if self.run_default is not None and self.convention != "default" else ""))

    def as_json(self) -> dict[str, Any]:
        return {"convention": self.convention, "title": self.title, "gflop_per_token": self.gflop_per_token,
                "run": self.run, "published": self.published, "ratio": self.ratio, "run_default": self.run_default,
                "default_gflop_per_token": self.default_gflop_per_token, "said": self.describe()}


def setup_rows(run: Row, rows: Sequence[Row]) -> list[Row]:
    """The rows of the run's setup (model, accelerator, precision, workload) and metric, with a positive value."""
    return [r for r in rows if r.get("metric") == COMPARE_METRIC and _positive(r.get("value"))
            and not cr.setup_differences(run, r)]


def comparable_rows(run: Row, rows: Sequence[Row]) -> tuple[list[Row], str]:
    """The setup's rows at the run's device count; where there is none, at the nearest device count stated (the
    smaller of two equally near); and what they match, in words."""
    setup = setup_rows(run, rows)
    devices = run.get("n_devices")
    same = [r for r in setup if devices and r.get("n_devices") == devices]
    if same or not setup:
        return same, "same model, accelerator, precision, workload and devices"
    stated = [r for r in setup if r.get("n_devices")]
    if not devices or not stated:
        return setup, "same model, accelerator, precision and workload (devices not stated on one side)"
    nearest = min({int(r["n_devices"]) for r in stated}, key=lambda n: (abs(math.log(n / devices)), n))
    return ([r for r in stated if r["n_devices"] == nearest],
            f"no published row at {devices:,} devices: the nearest stated, {nearest:,} devices")


def choose(run: Row, rows: Sequence[Row]) -> tuple[Row, str]:
    """The headline row among comparable `rows` and why (see the module docstring)."""
    family = [r for r in rows if cr.same_family(run.get("framework"), r.get("framework"))]
    pool, said = (family, f"the run's framework family ({run.get('framework')})") if family else (rows, "")
    mine = cr.version_key(run.get("framework_version"))
    versioned = [(v, r) for r in pool if (v := cr.version_key(r.get("framework_version"))) is not None]
    if mine is not None and versioned:
        target = min(versioned, key=lambda vr: (cr.version_distance(vr[0], mine), tuple(-x for x in vr[0])))[0]
        why = f"the closest framework version to the run's ({run.get('framework_version')})"
    elif versioned:
        target = max(v for v, _ in versioned)
        why = "the newest framework version published" + (" (the run states none)" if mine is None else "")
    else:
        target, why = None, "no framework version stated on the published rows"
    release = [r for v, r in versioned if v == target] if target is not None else list(pool)
    best = max(release, key=lambda r: (float(r["value"]), -int(r["id"])))
    held = f"; of its {len(release)} rows, the highest (variants of one release are held to their best)" \
        if len(release) > 1 else ""
    return best, "; ".join(p for p in (said, f"{why}: {best.get('framework_version') or 'unstated'}{held}") if p)


def gap(run: Row, run_value: float, chosen: Row, pool: Sequence[Row]) -> Gap:
    """The ratio split into the steps the same publisher's rows show (see the module docstring) and the rest."""
    base = float(chosen["value"])
    current, parts = chosen, []
    mine = cr.stated(run)
    for field in GAP_FIELDS:
        want = mine.get(field)
        if want in cr.UNSTATED or cr.same_value(cr.stated(current).get(field), want):
            continue
        step = _one_field_away(current, field, want, pool)
        if step is None:
            continue
        parts.append(GapPart(f"{cr.LABELS.get(field, field)} {cr.stated(current).get(field)} -> {want}: the same "
                             f"publisher's row at the run's value", (float(step["value"]) - float(current["value"])) / base,
                             (int(current["id"]), int(step["id"]))))
        current = step
    return Gap(run_value / base, tuple(parts), (run_value - float(current["value"])) / base)


def _one_field_away(current: Row, field: str, want: Any, pool: Sequence[Row]) -> Row | None:
    here = cr.stated(current)
    matches = [r for r in pool if _same_publisher(r, current) and r.get("id") != current.get("id")
               and cr.same_value(cr.stated(r).get(field), want)
               and all(cr.same_value(cr.stated(r).get(k), here.get(k)) for k in GAP_KEYS if k != field)]
    return max(matches, key=lambda r: (float(r["value"]), -int(r["id"]))) if matches else None


def _same_publisher(a: Row, b: Row) -> bool:
    pa, pb = a.get("publisher") or a.get("source_id"), b.get("publisher") or b.get("source_id")
    return pa is not None and pa == pb


def tflops_partner(row: Row, rows: Sequence[Row]) -> Row | None:
    """The model TFLOP/s the same printed row states: same source, locator and configuration (recipe included)."""
    mine = cr.stated(row)
    keys = set(mine) | {"source_id", "locator"}
    for r in rows:
        if r.get("metric") == TFLOPS_METRIC and r.get("source_id") == row.get("source_id") \
                and r.get("locator") == row.get("locator") and _positive(r.get("value")) \
                and all(cr.same_value(cr.stated(r).get(k), mine.get(k)) for k in keys - {"source_id", "locator"}):
            return r
    return None


def tflops_side_by_side(run_tps: float, published_tps: float, published_tflops: float, shape: fl.ModelShape,
                        seq_len: int, precision: str | None) -> TflopsSideBySide | None:
    """Both TFLOP/s under the first FLOPs convention that turns the published tokens/s into its published TFLOP/s
    within TFLOPS_TOLERANCE; None when none does (the two are then not set side by side)."""
    default = _per_token(fl.FORMULAS[fl.DEFAULT_FORMULA], shape, seq_len)
    for c in conventions(precision):
        per_token = _per_token(c.flops, shape, seq_len)
        if per_token is None or c.peak_precision is not None:
            continue
        recomputed = published_tps * per_token / 1e12
        if abs(published_tflops - recomputed) / recomputed <= TFLOPS_TOLERANCE:
            run = run_tps * per_token / 1e12
            return TflopsSideBySide(c.name, c.title, per_token / 1e9, run, published_tflops, run / published_tflops,
                                    run_tps * default / 1e12 if default else None,
                                    default / 1e9 if default else None)
    return None


def _per_token(fn: Callable[[fl.ModelShape, int], float], shape: fl.ModelShape, seq_len: int) -> float | None:
    try:
        value = fn(shape, seq_len)
    except InvalidInput:  # a formula needing what the catalog lacks (the parameter count): not this convention
        return None
    return value if value > 0 else None


def _positive(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True, slots=True)
class Verdict:
    """A run's verdict, as `python -m perfledger compare` prints it and its page shows it first."""

    run: int
    label: str
    headline: Headline
    published: Published | None
    reason: str | None
    comparable: tuple[Comparable, ...] = ()
    differences: tuple[cr.FieldDifference, ...] = ()
    gap: Gap | None = None
    goodput: Goodput | None = None
    tflops: TflopsSideBySide | None = None
    tflops_note: str = ""
    against: str = "published"

    def sentence(self) -> str:
        """The verdict in one sentence: "98.9% of the published 30,624 tokens/s/device (...)", or why there is none."""
        if self.published is None:
            return f"Not compared: {self.reason}"
        p = self.published
        return (f"{p.ratio:.1%} of the {p.label} {p.value:,.0f} tokens/s per device (result {p.result_id}"
                + (f", {p.source_id}" if p.source_id else "") + f"): {p.why}")

    def as_json(self) -> dict[str, Any]:
        return {"run": self.run, "label": self.label, "against": self.against, "headline": self.headline.as_json(),
                "published": self.published.as_json() if self.published else None, "reason": self.reason,
                "sentence": self.sentence(), "comparable": [c.as_json() for c in self.comparable],
                "differences": [d.as_json() for d in self.differences],
                "gap": self.gap.as_json() if self.gap else None,
                "tflops": self.tflops.as_json() if self.tflops else None, "tflops_note": self.tflops_note,
                "goodput": self.goodput.as_json() if self.goodput else None}
