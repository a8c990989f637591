"""A verdict (perfledger.calc.compare.Verdict) in words and tables: the same sentences for the run page and for
`python -m perfledger compare`."""

from __future__ import annotations

from typing import Any

import polars as pl

from perfledger import numbers
from perfledger.calc.compare import Verdict
from perfledger.calc.goodput import PART_LABELS, Goodput


def number(value: float | None, unit: str = "") -> str:
    """A derived figure as shown beside its label (perfledger.numbers: a share in %); "—" when there is none."""
    return numbers.percent_text(value) if unit == "%" else numbers.text(value, unit)


def headline_items(v: Verdict) -> list[tuple[str, str, str]]:
    """(label, value, how it was obtained) for each headline figure, tokens/s per device first."""
    h = v.headline
    flops = f"tokens/s per device x {h.flops_per_token / 1e9:,.1f} GFLOP per token ({h.flops_formula}) / 1e12" \
        if h.flops_per_token else "needs the model's shape and the sequence length"
    mfu_help = (f"model TFLOP/s / {h.peak_used}" if h.peak_used else h.why_no_mfu or "needs a peak for the precision")
    if h.log_mfu is not None:
        mfu_help += f"; the log's own MFU {h.log_mfu:.1%} is against {h.log_peak}"
    derived = " (derived)" if h.time_to_train_s is not None else ""  # from a result file's time to train
    items = [(f"Tokens/s per device{derived}", number(h.tokens_per_s_per_device), "steady window: tokens / time / "
              "devices" if not derived else "trained tokens over the time to train, per device: not an MLPerf metric"),
             (f"Model TFLOP/s per device{derived}", number(h.model_tflops_per_device), flops),
             ("MFU", number(h.mfu, "%"), mfu_help)]
    if h.time_to_train_s is not None:
        items.insert(0, ("Time to train (this result file)", number(h.time_to_train_s / 60, "min"),
                         "run_stop - run_start of the file; a score needs a campaign of one submitter's system"))
    ratio = v.published.ratio if v.published else None
    items.append((f"Of the {v.published.label if v.published else 'published'} figure", number(ratio, "%"),
                  v.sentence()))
    return items


def peak_line(v: Verdict) -> str:
    """Which peak the MFU is against, and the log's own where it printed one."""
    h = v.headline
    ours = f"MFU against {h.peak_used}" if h.peak_used else f"no MFU: {h.why_no_mfu or 'no peak for this device'}"
    theirs = f"; the log's own MFU {h.log_mfu:.1%} is against {h.log_peak}" if h.log_mfu is not None else ""
    return ours + theirs


def lines(v: Verdict) -> list[str]:
    """The verdict as text: headline, the comparison, TFLOP/s under one count, rows, differences, gap, goodput."""
    out = [v.label, "  " + " · ".join(f"{label} {value}" for label, value, _ in headline_items(v)[:-1]),
           "  " + peak_line(v), "  " + v.sentence()]
    if v.tflops_note:
        out.append("  " + v.tflops_note)
    for c in v.comparable:
        out.append(f"  {'*' if c.chosen else ' '} result {c.result_id} {c.source_id} {c.framework_version or '-'} "
                   f"{c.precision_recipe or ''} {c.n_devices} devices: {c.value:,.0f} tokens/s/device "
                   f"({number(c.ratio, '%')}); TFLOP/s {number(c.tflops)} [audit: {c.audit_verdict}]")
    if v.differences:
        out.append("  differs in: " + "; ".join(d.describe() for d in v.differences))
    if v.gap is not None:
        parts = "".join(f" {p.share:+.2%} ({p.cause})" for p in v.gap.parts)
        out.append(f"  gap: {v.gap.ratio:.2%} = 100%{parts} {v.gap.unexplained:+.2%} unexplained")
    if v.goodput is not None:
        out.append("  " + goodput_sentence(v.goodput))
    return out


def goodput_sentence(g: Goodput) -> str:
    parts = ", ".join(f"{PART_LABELS[p.name]} {p.seconds:,.1f} s" for p in g.parts if p.seconds)
    per_hour = f"; {g.tokens_per_device_hour:,.0f} tokens per device-hour" if g.tokens_per_device_hour else ""
    per_usd = f", {g.tokens_per_usd:,.0f} per dollar" if g.tokens_per_usd else ""
    return f"wall {g.wall_s:,.1f} s, measured as {g.wall_from}: {parts}{per_hour}{per_usd}"


COMPARABLE_SCHEMA: dict[str, pl.DataType] = {
    "headline": pl.Boolean(), "result id": pl.Int64(), "source": pl.String(), "framework version": pl.String(),
    "precision recipe": pl.String(), "devices": pl.Int64(), "global batch": pl.Int64(),
    "tokens/s/device": pl.Float64(), "run / row": pl.Float64(), "TFLOP/s printed": pl.Float64(),
    "audit of its TFLOP/s": pl.String()}


def comparable_frame(v: Verdict) -> pl.DataFrame:
    rows = [(c.chosen, c.result_id, c.source_id, c.framework_version, c.precision_recipe, c.n_devices, c.global_batch,
             c.value, c.ratio, c.tflops, c.audit_verdict) for c in v.comparable]
    return pl.DataFrame(rows, schema=COMPARABLE_SCHEMA, orient="row")


def differences_frame(v: Verdict) -> pl.DataFrame:
    rows = [(d.label, _shown(d.run), _shown(d.published)) for d in v.differences]
    return pl.DataFrame(rows, schema={"field": pl.String(), "run": pl.String(), "published": pl.String()},
                        orient="row")


def gap_frame(v: Verdict) -> pl.DataFrame:
    """The gap's parts and the unexplained rest, each in ratio points, with the rows each part rests on."""
    if v.gap is None:
        return pl.DataFrame(schema={"part": pl.String(), "share": pl.Float64(), "inputs": pl.String()})
    rows = [(p.cause, p.share, ", ".join(f"result {i}" for i in p.inputs)) for p in v.gap.parts]
    rows.append(("unexplained: no stored row shows a cause", v.gap.unexplained, ""))
    return pl.DataFrame(rows, schema={"part": pl.String(), "share": pl.Float64(), "inputs": pl.String()},
                        orient="row")


def goodput_frame(g: Goodput) -> pl.DataFrame:
    """One row per part: seconds, share of the wall clock, what in the log marks it (the stacked bar's data)."""
    rows = [(PART_LABELS[p.name], p.name, p.seconds, p.seconds / g.wall_s if g.wall_s else None, p.marked_by)
            for p in g.parts]
    return pl.DataFrame(rows, schema={"part": pl.String(), "key": pl.String(), "seconds": pl.Float64(),
                                      "share": pl.Float64(), "marked by": pl.String()}, orient="row")


def _shown(value: Any) -> str:
    return "unstated" if value in (None, "") else f"{value:,}" if isinstance(value, int) else str(value)
