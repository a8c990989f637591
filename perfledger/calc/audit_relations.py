"""Audit of the relations among the quantities one printed row prints (data/relations.csv, perfledger.relations).

A printed row is the figures of one source, locator and configuration: its cells (global batch, sequence length,
devices, and the quantities its further columns print through data/column_names.csv: generation batch, average
sequence length ...) and its figures (step time, tokens/s per device or in all, samples/s). For every figure a
relation recomputes from the others, and whose inputs the row prints all of, the figure is judged:

    tokens_per_s_per_device = global_batch x seq_len / (step_time_s x n_devices)      (generic)
    tokens_per_s_per_device = generation_batch x avg_seq_len / (step_time_s x n_devices)   (NeMo RL's page)

A publisher's own formula replaces the generic relation of the same figure on that publisher's rows; the generic
throughput relations hold only for rows that are not RL post-training (an RL step generates, scores and trains, so
its tokens per step are not its batch x sequence length). Each verdict names its relation and its input cells.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from perfledger.calc import audit, audit_mfu, pairing
from perfledger.calc.audit_judge import DEFAULT, Candidate, claim_row, judge
from perfledger.claim_cells import printed_number
from perfledger.headers import quantities_of
from perfledger.relations import CELLS, COLUMNS, RATES, Relation, relations

DEFAULT_RULE = audit.AuditRule()
CLAIM_METRICS = RATES
UNITS = {"tokens_per_s_per_device": "tokens/s/device", "tokens_per_s": "tokens/s", "samples_per_s": "samples/s",
         "step_time_s": "s"}  # a configuration cell (global batch, DP, devices) is a count: no unit
ROW_FIGURES = (*RATES, "model_tflops_per_device", "mfu")  # a row printing any of them has its cells checked


def audit_relations(results: pl.DataFrame, rule: audit.AuditRule = DEFAULT_RULE,
                    source_texts: Mapping[str, str] | None = None,
                    known: tuple[Relation, ...] | None = None) -> pl.DataFrame:
    """One row per (figure, relation) checked (audit_mfu.AUDIT_COLUMNS): reported, recomputed, verdict, relation,
    the input cells. `source_texts` gives each source's id, title and URL (which publisher's formula holds)."""
    frame = _printed_rows(results)
    texts = dict(source_texts or {})
    rows = [row for group in frame.partition_by("_group", maintain_order=True)
            for row in _audit_group(group.to_dicts(), known or relations(), rule, texts)]
    return pl.DataFrame(rows, schema=audit_mfu.AUDIT_COLUMNS)


def _printed_rows(results: pl.DataFrame) -> pl.DataFrame:
    """The published rate figures with positive values, numbered by printed row (source, locator, configuration)."""
    frame = pairing.with_config_keys(results).filter(~pl.col("_derived"))
    for name in (*COLUMNS, "attributes", "workload", "locator"):
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None).alias(name))
    value = pl.col("value").cast(pl.Float64)
    frame = frame.filter(pl.col("metric").is_in(ROW_FIGURES), value > 0, value.is_finite(),
                         pl.col("source_id").is_not_null())  # a run's own figures: its page recomputes them
    keys = ["source_id", "locator", *pairing.config_keys(frame, with_source=False)]
    return frame.with_columns(_group=pl.struct(keys).rank("dense"))


def _audit_group(rows: list[dict[str, Any]], known: tuple[Relation, ...], rule: audit.AuditRule,
                 texts: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    figures: dict[str, dict[str, Any]] = {}
    for row in rows:
        figures.setdefault(row["metric"], row)
    first = rows[0]
    cells = {name: float(first[name]) for name in COLUMNS if first.get(name)}
    printed = quantities_of(first.get("attributes"))
    cells |= {q: number for q, text in printed.items() if (number := printed_number(text)) is not None}
    text = " ".join(str(x) for x in (first["source_id"], texts.get(str(first["source_id"]), "")) if x)
    derived = _derived_cells(cells, known, first.get("workload"), text)
    cells |= {name: value for name, (value, _) in derived.items()}
    for metric, claim in figures.items():
        if metric not in RATES:
            continue
        quantities = cells | {m: float(r["value"]) for m, r in figures.items() if m != metric and m in RATES}
        yield from _checked(claim, metric, float(claim["value"]), quantities, known, text,
                            figures, printed, derived, rule)
    for cell in CELLS:  # a configuration cell the row prints, against the others (GBS = MBS x DP x GA)
        if cell in cells and cell not in derived:
            others = {k: v for k, v in cells.items() if k != cell}
            yield from _checked(first | {"metric": cell}, cell, cells[cell], others, known, text,
                                figures, printed, derived, rule)


def _checked(claim: Mapping[str, Any], checks: str, reported: float, quantities: Mapping[str, float],
             known: tuple[Relation, ...], text: str, figures: Mapping[str, Mapping[str, Any]],
             printed: Mapping[str, str], derived: Mapping[str, tuple[float, Relation]],
             rule: audit.AuditRule) -> Iterator[dict[str, Any]]:
    """A verdict per relation of `checks` that holds for the row and whose inputs it prints (or derives); a
    publisher's own formula replaces the generic ones."""
    holding = [r for r in known if r.checks == checks and r.holds_for(claim.get("workload"), text)]
    own = [r for r in holding if not r.generic]
    for relation in own or holding:
        if all(name in quantities for name in relation.inputs):
            yield _verdict(claim, reported, relation, quantities, figures, printed, derived, rule)


def _derived_cells(cells: Mapping[str, float], known: tuple[Relation, ...], workload: str | None,
                   text: str) -> dict[str, tuple[float, Relation]]:
    """Configuration cells the row does not print but whose relation's inputs it does (DP = devices / (TP x PP x
    CP)), each with the relation that gives it; never one the row prints, never from another derived cell."""
    out: dict[str, tuple[float, Relation]] = {}
    for relation in known:
        if relation.checks in CELLS and relation.checks not in cells and relation.checks not in out \
                and relation.holds_for(workload, text) and all(name in cells for name in relation.inputs):
            value = relation.value(cells)
            if value is not None:
                out[relation.checks] = (value, relation)
    return out


def _verdict(claim: Mapping[str, Any], reported: float, relation: Relation, quantities: Mapping[str, float],
             figures: Mapping[str, Mapping[str, Any]], printed: Mapping[str, str],
             derived: Mapping[str, tuple[float, Relation]], rule: audit.AuditRule) -> dict[str, Any]:
    unit = UNITS.get(relation.checks, "")
    recomputed = relation.value(quantities)
    used = replace(rule, tolerance=relation.tolerance) if relation.tolerance is not None else rule
    candidates = [Candidate(DEFAULT, relation.formula(), recomputed)] if recomputed is not None else []
    shown = ", ".join(f"{name} {quantities[name]:,.6g}" for name in relation.inputs)
    judgement = judge(reported, candidates, used.tolerance, lambda v: f"{v:,.4g} {unit}".rstrip(), shown)
    row = claim_row(claim, reported, judgement, unit, used,
                    tokens_per_s=recomputed if relation.checks == "tokens_per_s_per_device" else None)
    reason = row["reason"]
    if not relation.generic:
        cited = f"the publisher's own formula ({relation.source})" + (f"; {relation.note}" if relation.note else "")
        reason = f"{reason}; {cited}" if reason else cited
    named = relation.formula() if relation.generic else f"publisher's formula: {relation.formula()}"
    return row | {"relation": named, "reason": reason, "explanation": reason or "",
                  "inputs": _inputs(claim, relation, figures, printed, derived)}


def _inputs(claim: Mapping[str, Any], relation: Relation, figures: Mapping[str, Mapping[str, Any]],
            printed: Mapping[str, str], derived: Mapping[str, tuple[float, Relation]]) -> str:
    """Each input as a verdict names it: a figure by its result ("result 12 (src, loc): step_time_s 134"), the
    row's own cells by their quantity and printed text, a derived cell by its relation ("dp 2 derived: dp =
    n_devices / (tp x pp x cp)")."""
    out, own = [], []
    for name in relation.inputs:
        if name in derived:
            value, how = derived[name]
            own.append(f"{name} {value:,.6g} derived: {how.formula()}")
        elif name in figures and name in RATES:
            row = figures[name]
            out.append(f"{pairing.describe_input(row['id'], row['source_id'], row.get('locator'))}: "
                       f"{name} {float(row['value']):,.6g}")
        else:
            own.append(f"{name} {printed.get(name) or claim.get(name)}")
    if own:
        out.append(f"{pairing.describe_input(claim['id'], claim['source_id'], claim.get('locator'))} cells: "
                   + ", ".join(own))
    return "; ".join(out)
