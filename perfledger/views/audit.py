"""Audit: every claim (TFLOPS, MFU/HFU, time to train, scaling) recomputed from its own inputs, with a verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import (
    audit,
    audit_mfu,
    audit_relations,
    audit_scaling,
    audit_speedup,
    audit_time,
    flops,
    metrics,
    pairing,
)
from perfledger.views._shared import ALL_WORKLOADS, FORMULA_NAMES, WORKLOADS, CatalogRef
from perfledger.views.remembered import by_content, until_written

VERDICTS = audit.VERDICTS
# Every claim kind the audit checks and the rows it recomputes them from; the note states a time claim's tokens,
# the baseline a speedup's device count.
AUDITED_METRICS = {audit.CLAIM_METRIC, audit.THROUGHPUT_METRIC, *audit_mfu.CLAIM_METRICS, *audit_time.CLAIM_METRICS,
                   *audit_time.BASIS_METRICS, *audit_scaling.CLAIM_METRICS, *audit_scaling.THROUGHPUT_METRICS,
                   *audit_relations.CLAIM_METRICS}  # a row's step time gives its throughput (derived)
INPUT_COLUMNS = (*audit.INPUT_COLUMNS, "note", "baseline")


@dataclass(frozen=True)
class AuditView:
    verdicts: tuple[str, ...] = u.key("v", (), choices=VERDICTS)
    sources: tuple[str, ...] = u.key("src", ())
    models: tuple[str, ...] = u.key("m", ())
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    tolerance: float = u.key("tol", audit.DEFAULT_TOLERANCE, low=0.0, high=1.0)
    workload: str = u.key("w", ALL_WORKLOADS, choices=WORKLOADS)
    cross_source: bool = u.key("xs", False)  # also pair claims with other sources' rows of the same configuration
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        scope = ", ".join([*self.verdicts, *self.sources, *self.models]) or "every claim"
        across = "; other sources' figures used where a claim's own has none" if self.cross_source else ""
        return f"Claims checked against recomputation ({scope}; tolerance {self.tolerance:.0%}{across})"

    def catalog_ids(self) -> tuple[CatalogRef, ...]:
        return (("m", "model", self.models),)

    def rule(self) -> audit.AuditRule:
        return audit.AuditRule(tolerance=self.tolerance, formula=self.formula, cross_source=self.cross_source)


def audit_rule(state: AuditView) -> audit.AuditRule:
    return state.rule()


# What a 1440px screen shows first: the claim, its figure reported and recomputed, the verdict and why, the source;
# the claim's configuration to the right (the CSV and `perfledger audit` keep the audit's own column order).
SHOWN_FIRST = ("claim_id", "metric", "reported", "recomputed", "rel_diff", "verdict", "explanation", "source_id",
               "model_id", "accelerator_id", "n_devices", "unit", "plausibility", "convention", "inputs", "input_source")


def table(state: AuditView, engine: Engine) -> pl.DataFrame:
    """perfledger.calc.audit over every stored claim, then the page's filters; the CLI's `audit` is this."""
    rows = store.results(engine, metric=sorted(AUDITED_METRICS), columns=INPUT_COLUMNS)
    frame = _audited(rows, *store.catalog(engine), state.rule(), source_texts(engine))
    if state.workload != ALL_WORKLOADS:
        frame = frame.filter(pl.col("workload") == state.workload)
    if state.models:
        frame = frame.filter(pl.col("model_id").is_in(list(state.models)))
    if state.sources:
        frame = frame.filter(pl.col("source_id").is_in(list(state.sources)))
    if state.verdicts:
        frame = frame.filter(pl.col("verdict").is_in(list(state.verdicts)))
    return frame.sort(list(ORDER), nulls_last=True, maintain_order=True)


def source_texts(engine: Engine) -> pl.DataFrame:
    """Each source's id and the text a publisher's own relation is matched in (id, title, URL)."""
    sources = store.sources(engine)
    return sources.select("id", text=pl.concat_str([pl.col(c).fill_null("") for c in ("id", "title", "url")],
                                                   separator=" "))


@by_content(keep=4)
def _audited(rows: pl.DataFrame, models: pl.DataFrame, accelerators: pl.DataFrame,
             rule: audit.AuditRule, sources: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every claim among `rows` audited, unfiltered and unsorted."""
    catalog = (models, accelerators)
    texts = dict(sources.iter_rows()) if sources is not None else {}
    tflops = audit.audit_claims(rows, *catalog, rule)
    tflops = tflops.with_columns(  # the TFLOPS audit names its other formula in the explanation
        convention=pl.when(pl.col("verdict") == "consistent").then(pl.lit("default")).otherwise(pl.lit(None)),
        reason=pl.when(pl.col("verdict") == "consistent").then(  # consistent, but say what it assumed
            pl.when(pl.col("explanation").fill_null("").str.contains(" assumed: ")).then(pl.col("explanation")))
        .when(pl.col("explanation").fill_null("") != "").then(pl.col("explanation"))
        .when(pl.col("recomputed").is_not_null()).then(pl.format(
            "recomputed {} TFLOP/s from its tokens/s, {} off the claimed {}, and no other FLOPs formula comes "
            "within the tolerance", pl.col("recomputed").round(1), (pl.col("rel_diff") * 100).round(1).cast(pl.String)
            + "%", pl.col("reported")))
        .otherwise(pl.lit("no tokens/s row, model shape or peak to recompute it from")),
        relation=_tflops_relation(tflops, models))
    columns: Any = audit_mfu.AUDIT_COLUMNS
    return pl.concat([tflops.select(list(columns)).cast(columns),
                      audit_mfu.audit_utilization(rows, *catalog, rule),
                      audit_time.audit_time_to_train(rows, *catalog, rule),
                      audit_scaling.audit_scaling(rows, rule), audit_speedup.audit_speedups(rows, rule),
                      audit_relations.audit_relations(rows, rule, texts)], how="vertical")


def _tflops_relation(tflops: pl.DataFrame, models: pl.DataFrame) -> pl.Series:
    """The relation a TFLOPS claim is checked by, naming the model shape it used and where that shape comes from."""
    shapes = dict(models.select("id", "source_id").iter_rows()) if "source_id" in models.columns else {}
    named = [f"{audit.RELATION} ({m} shape from {shapes.get(m) or 'the catalog'})" if m else audit.RELATION
             for m in tflops["model_id"].to_list()]
    return pl.Series("relation", named, dtype=pl.String)


ORDER = ("verdict", "source_id", "model_id", "n_devices")  # the table's rows, sorted stably


def with_input_rows(table_frame: pl.DataFrame) -> pl.DataFrame:
    """The table with `input_source`: the source of the first figure each verdict used (the page links it to that
    source's rows on the Sources page, where the result ids of `inputs` are listed), empty when it used none."""
    first = [next(iter(pairing.input_refs(text)), (None, None))[1] for text in table_frame["inputs"].to_list()]
    return table_frame.with_columns(pl.Series("input_source", first, dtype=pl.String))


def to_resolve(engine: Engine) -> pl.DataFrame:
    """The cells and names imports could not read yet, each once with its rows and the command that answers it
    (store.to_resolve; `python -m perfledger resolve list` prints the same): a section under the audit, since an
    unread unit or name is a figure the audit cannot check yet."""
    return store.to_resolve(engine)


def verdict_counts(table_frame: pl.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in table_frame.group_by("verdict").len().iter_rows()}


FORMULAS: tuple[Callable[..., Any], ...] = (audit.relative_difference, metrics.model_tflops, metrics.mfu)


WARNING_KEYS = ("source_id", "model_id", "accelerator_id", "n_devices", "seq_len")


@until_written(keep=4)  # asked by three pages, twice on Accelerators
def implausible_warnings(engine: Engine) -> dict[tuple[Any, ...], str]:
    """The audit's warning for each configuration (source, model, accelerator, devices, seq len) whose claim it
    calls implausible at the default rule: pages showing a figure of that configuration carry the sentence."""
    frame = _implausible_claims(engine, AuditView())
    return {tuple(r[k] for k in WARNING_KEYS): warning_sentence(r["explanation"], r["precision"])
            for r in frame.select(*WARNING_KEYS, "precision", "explanation").to_dicts()}


_FP8_WAY_OUT = "; plausible only in FP8"


def warning_sentence(explanation: str, precision: str | None) -> str:
    """The audit's warning as a page shows it beside a figure. A figure whose precision its source left unstated is
    read at BF16 by the audit; when FP8 would make it plausible, that is what the warning says first, not a bare
    "implausible".

    >>> warning_sentence("84.5% of the dense bf16 peak exceeds the 70% ceiling; plausible only in FP8 (42.2% of "
    ...                  "the FP8 dense peak)", "unstated")
    'precision unstated: plausible only in FP8 (42.2% of the FP8 dense peak); read as BF16, 84.5% of the dense bf16 peak exceeds the 70% ceiling'
    """
    unstated = precision in (None, "", "unstated")
    if unstated and _FP8_WAY_OUT in explanation:
        read_as_bf16, _, fp8 = explanation.partition(_FP8_WAY_OUT)
        return f"precision unstated: plausible only in FP8{fp8}; read as BF16, {read_as_bf16}"
    if unstated:
        return f"audit: implausible read as BF16, the precision being unstated ({explanation})"
    return f"audit: implausible ({explanation})"


def _implausible_claims(engine: Engine, state: AuditView) -> pl.DataFrame:
    """The rows of `table(state)` (no filters) the audit calls implausible, in the table's order: model-TFLOPS
    claims above the MFU ceiling of their peak, and MFU claims above it, judged alike. Plausibility needs only the
    claim and its peak, so the implausible claims are found first, then audited with the rows of their models and
    accelerators (every row their audit can match), not the whole store (1.5 s on 100,000 results)."""
    rule = state.rule()
    models, accelerators = store.catalog(engine)
    claims = store.results(engine, metric=audit.CLAIM_METRIC, columns=("id", "accelerator_id", "precision", "value"))
    rows = store.results(engine, metric=audit.CLAIM_METRIC, ids=audit.implausible_ids(claims, accelerators, rule),
                         columns=audit.INPUT_COLUMNS)
    basis = _basis_of(engine, rows, [audit.THROUGHPUT_METRIC])
    tflops = audit.audit_claims(pl.concat([rows, basis]).sort("id"), models, accelerators, rule)
    mfu = store.results(engine, metric="mfu", columns=("id", "value"))
    mfu_ids = mfu.filter(pl.col("value") > rule.mfu_ceiling)["id"].to_list()
    mfu_rows = store.results(engine, metric="mfu", ids=mfu_ids, columns=audit.INPUT_COLUMNS)
    basis = _basis_of(engine, mfu_rows, [audit.THROUGHPUT_METRIC, audit.CLAIM_METRIC])
    utilization = audit_mfu.audit_utilization(pl.concat([mfu_rows, basis]).sort("id"), models, accelerators, rule)
    columns = [*WARNING_KEYS, *ORDER[:1], "precision", "plausibility", "explanation"]
    both = pl.concat([tflops.select(columns), utilization.select(columns)])
    return both.filter(pl.col("plausibility") == "implausible").sort(list(ORDER), nulls_last=True,
                                                                     maintain_order=True)


def _basis_of(engine: Engine, claims: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """The rows of `metrics` of the claims' models and accelerators: every row their audits can match."""
    return store.results(engine, metric=metrics,
                         model_ids=_ids_in(claims, "model_id"), accelerator_ids=_ids_in(claims, "accelerator_id"),
                         columns=audit.INPUT_COLUMNS)


def _ids_in(rows: pl.DataFrame, column: str) -> list[str] | None:
    """The column's values as a store filter; None (no filter) when a row has none: a null matches a null."""
    values = rows[column]
    return None if values.null_count() else sorted(set(values.to_list()))
