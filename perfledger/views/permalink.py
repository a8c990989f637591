"""A result's permalink (`/sources?result=ID`): every stored field of one result row, its source, the audit's verdict
on it, and the dashboard views whose tables show it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.errors import InvalidQuery, PerfledgerError
from perfledger.views import accelerators, audit, mlperf, runs, scaling, sources, speedups
from perfledger.views._shared import TFLOPS_METRIC, TOKEN_METRIC, WORKLOADS
from perfledger.views.links import to
from perfledger.views.registry import page_of, table

SCHEMA: dict[str, pl.DataType] = {"field": pl.String(), "value": pl.String()}
_ID_COLUMNS = ("id", "claim_id")  # a table's own result id (Sources, Audit), beside every '... result id' column


def as_text(value: Any) -> str | None:
    """A stored value as the permalink prints it: numbers as stored, every digit, thousands grouped.

    >>> as_text(10752.0), as_text(16913), as_text(0.845), as_text(None)
    ('10,752', '16,913', '0.845', None)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,}"


def stored_row(engine: Engine, result_id: int) -> dict[str, Any]:
    rows = store.results(engine, ids=[result_id])
    if rows.height == 0:
        raise InvalidQuery(f"there is no result {result_id}; the Sources page lists every source and its rows")
    return rows.row(0, named=True)


def detail(engine: Engine, result_id: int) -> pl.DataFrame:
    """Every field of result `result_id` (stored columns and its source's title and link), then the audit's verdict
    on it and the views that show it, as (field, value) rows."""
    row = stored_row(engine, result_id)
    fields = [(name, as_text(value)) for name, value in row.items()]
    fields += list(_audit(engine, row))
    fields += [("shown in", href) for href in views_using(engine, row)]
    return pl.DataFrame(fields, schema=SCHEMA, orient="row")


def _audit(engine: Engine, row: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """The audit's verdict on the row (a checked claim), or on the claims it is an input of."""
    if not row.get("source_id"):
        yield "audit verdict", "not audited (a run's own figure: its page recomputes it from its steps)"
        return
    audited = table("audit", audit.AuditView(sources=(row["source_id"],)), engine)
    claims = audited.filter(pl.col("claim_id") == row["id"])
    used_by = audited.filter(pl.col("inputs").str.contains(rf"\bresult {int(row['id'])}\b").fill_null(False))
    if claims.height == 0:
        yield "audit verdict", "not a checked claim (no audit rule checks this metric, or its inputs are not stored)"
    for c in claims.to_dicts():
        yield "audit verdict", c.get("verdict")
        yield "audit recomputed", as_text(c.get("recomputed"))
        yield "audit explanation", c.get("explanation")
        yield "audit inputs", c.get("inputs")
    for c in used_by.to_dicts():
        yield "audit input of", f"claim {c['claim_id']} ({c['metric']}): {c['verdict']}"


def _candidates(row: dict[str, Any]) -> Iterator[Any]:
    """The views that could show the row: its source's and run's, and its model's on the comparing pages."""
    yield sources.SourcesView(source=row["source_id"]) if row.get("source_id") else None
    yield runs.RunsView(run=int(row["run_id"])) if row.get("run_id") else None
    yield mlperf.MlperfView() if row.get("run_id") else None
    yield audit.AuditView(sources=(row["source_id"],)) if row.get("source_id") else None
    yield from (speedups.SpeedupView(preset=p) for p in speedups.SPEEDUP_PRESETS if p != "custom")
    model, workload = row.get("model_id"), row.get("workload") or "all"
    if model and workload in WORKLOADS:
        yield from (accelerators.AcceleratorView(models=(model,), metric=m, workload=workload)
                    for m in (TOKEN_METRIC, TFLOPS_METRIC) if row.get("metric") == m)
        yield from (scaling.ScalingView(section=s, models=(model,), workload=workload) for s in scaling.SECTIONS)


def _shows(frame: pl.DataFrame, result_id: int, own_ids: bool) -> bool:
    columns = [c for c in frame.columns if c.endswith("result id") or (own_ids and c in _ID_COLUMNS)]
    return any(frame[c].cast(pl.Int64, strict=False).eq(result_id).any() for c in columns)


def views_using(engine: Engine, row: dict[str, Any]) -> list[str]:
    """The links of the views whose table shows result `row` (its id in a result-id column of the table)."""
    found = []
    for state in _candidates(row):
        if state is None:
            continue
        slug = page_of(state).slug
        try:
            shown = page_of(state).table(state, engine)
        except PerfledgerError:
            continue
        if slug == "runs" or _shows(shown, int(row["id"]), own_ids=slug in ("sources", "audit")):
            found.append(to(state).href)
    return found
