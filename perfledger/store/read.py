"""Read queries: each opens one connection, returns a Polars frame (or a small record) with schema dtypes."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.errors import StoreNotInitialised
from perfledger.records import STEP_SCHEMA, RunRow
from perfledger.store import lake_steps, pg_copy
from perfledger.store.engine import answers_for, block_answers
from perfledger.store.engine import connection as _connection
from perfledger.store.lake import lake_of
from perfledger.store.stamp import read_stamp
from perfledger.store.upgrade import run_date
from perfledger.vocabulary import LogFormat, Workload

STEP_COLUMNS = tuple(STEP_SCHEMA)


_PL_TYPES: dict[type, pl.DataType] = {
    sa.Integer: pl.Int64(),
    sa.Float: pl.Float64(),
    sa.Boolean: pl.Boolean(),
    sa.String: pl.String(),
    sa.Text: pl.String(),
    sa.DateTime: pl.Datetime("us", "UTC"),
}


def polars_type(column: sa.ColumnElement[Any]) -> pl.DataType:
    for sa_type, pl_type in _PL_TYPES.items():
        if isinstance(column.type, sa_type):
            return pl_type
    return pl.String()


def _frame(conn: Connection, stmt: sa.Select[Any]) -> pl.DataFrame:
    """Run a select and return a frame whose dtypes follow the schema, the same on every engine; a select asked
    again in the same `reading()` block gets the frame it got the first time (frames are not changed in place)."""
    answers = answers_for(conn)
    if answers is None:
        return _fresh_frame(conn, stmt)
    key = _select_key(conn, stmt)
    if key not in answers:
        answers[key] = _fresh_frame(conn, stmt)
    frame: pl.DataFrame = answers[key]
    return frame


def _select_key(conn: Connection, stmt: sa.Select[Any]) -> tuple[Any, ...]:
    compiled = stmt.compile(dialect=conn.dialect)
    return str(compiled), tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in compiled.params.items())


def _fresh_frame(conn: Connection, stmt: sa.Select[Any]) -> pl.DataFrame:
    target = {c.name: polars_type(c) for c in stmt.selected_columns}
    if conn.dialect.name == "duckdb":
        frame = conn.execute(stmt).cursor.pl()  # Arrow, no row objects
    elif pg_copy.copyable(conn, target) and (sql := pg_copy.literal_sql(conn, stmt)) is not None:
        frame = pg_copy.copied_frame(conn, sql, target)
    else:
        frame = pl.read_database(stmt, conn, infer_schema_length=None)
    if frame.height == 0:
        return pl.DataFrame(schema=target)
    return cast_to(frame, target)


def cast_to(frame: pl.DataFrame, target: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(name).cast(dtype, strict=False) for name, dtype in target.items() if frame.schema[name] != dtype
    )


def query(engine: Engine, stmt: sa.Select[Any]) -> pl.DataFrame:
    with _connection(engine, write=False) as conn:
        return _frame(conn, stmt)


def _results_select() -> sa.Select[Any]:
    r, s, a, m = schema.result, schema.source, schema.accelerator, schema.model
    return (
        sa.select(
            *[c for c in r.c if c.name != "row_key"],
            s.c.kind.label("source_kind"),
            s.c.title.label("source_title"),
            s.c.url.label("source_url"),
            s.c.date.label("source_date"),
            a.c.name.label("accelerator_name"),
            a.c.vendor.label("accelerator_vendor"),
            m.c.name.label("model_name"),
        )
        .select_from(
            r.outerjoin(s, r.c.source_id == s.c.id)
            .outerjoin(a, r.c.accelerator_id == a.c.id)
            .outerjoin(m, r.c.model_id == m.c.id)
        )
        .order_by(r.c.id)
    )


def results(
    engine: Engine,
    *,
    metric: str | Sequence[str] | None = None,
    model_ids: Sequence[str] | None = None,
    accelerator_ids: Sequence[str] | None = None,
    source_ids: Sequence[str] | None = None,
    run_id: int | None = None,
    ids: Sequence[int] | None = None,
    run_ids: Sequence[int] | None = None,
    workload: str | None = None,
    columns: Sequence[str] | None = None,
    published: bool = False,
) -> pl.DataFrame:
    """Result rows with their source, accelerator and model names; every filter is a bound parameter. `columns`
    keeps only those (in the table's order); `published` keeps the rows no stored run measured."""
    r = schema.result
    stmt = _results_select()
    if columns is not None:
        unknown = set(columns) - {c.name for c in stmt.selected_columns}
        if unknown:
            raise ValueError(f"no result column named {', '.join(sorted(unknown))}")
        stmt = stmt.with_only_columns(*(c for c in stmt.selected_columns if c.name in set(columns)))
    if metric is not None:
        stmt = stmt.where(r.c.metric.in_([metric] if isinstance(metric, str) else list(metric)))
    if model_ids is not None:
        stmt = stmt.where(r.c.model_id.in_(list(model_ids)))
    if accelerator_ids is not None:
        stmt = stmt.where(r.c.accelerator_id.in_(list(accelerator_ids)))
    if source_ids is not None:
        stmt = stmt.where(r.c.source_id.in_(list(source_ids)))
    if run_id is not None:
        stmt = stmt.where(r.c.run_id == run_id)
    if workload is not None:
        stmt = stmt.where(r.c.workload == workload)
    if ids is not None:
        stmt = stmt.where(r.c.id.in_(list(ids)))
    if run_ids is not None:
        stmt = stmt.where(r.c.run_id.in_(list(run_ids)))
    if published:  # the seed's rows and every imported claims table's: no run of the store measured them
        imports = sa.select(schema.run.c.id).where(schema.run.c.format == LogFormat.CLAIMS_CSV.value)
        stmt = stmt.where(sa.or_(r.c.run_id.is_(None), r.c.run_id.in_(imports)))
    return query(engine, stmt)


MEASURED_KIND = "measured (ingested runs)"  # the kind of a figure with no source, measured from a stored run


def result_counts(engine: Engine, by: str) -> pl.DataFrame:
    """Result rows, distinct sources and distinct runs per value of `by` (source_kind or a result column), counted
    in SQL; by source_kind, a figure measured from an ingested run and citing no source counts as MEASURED_KIND."""
    r, src = schema.result, schema.source
    measured = sa.case((r.c.run_id.is_not(None), sa.literal(MEASURED_KIND)), else_=sa.null())
    column = sa.func.coalesce(src.c.kind, measured) if by == "source_kind" else r.c[by]
    stmt = (sa.select(column.label(by), sa.func.count().label("result rows"),
                      sa.func.count(sa.distinct(r.c.source_id)).label("sources"),
                      sa.func.count(sa.distinct(r.c.run_id)).label("runs"))
            .select_from(r.outerjoin(src, r.c.source_id == src.c.id))
            .group_by(column))
    return query(engine, stmt)


def _accelerators_select() -> sa.Select[Any]:
    return sa.select(schema.accelerator).order_by(schema.accelerator.c.id)


def _models_select() -> sa.Select[Any]:
    return sa.select(schema.model).order_by(schema.model.c.id)


def accelerators(engine: Engine) -> pl.DataFrame:
    return query(engine, _accelerators_select())


def models(engine: Engine) -> pl.DataFrame:
    return query(engine, _models_select())


def catalog_rows(engine: Engine, model_id: str | None, accelerator_id: str | None
                 ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The model's and the accelerator's catalog rows (None where the id is None or unknown), through one
    connection and without Arrow: an ingest process that reads two rows should not load pyarrow (~40 MB)."""
    if model_id is None and accelerator_id is None:
        return None, None
    wanted = [(schema.model, model_id), (schema.accelerator, accelerator_id)]
    with _connection(engine, write=False) as conn:
        found = [conn.execute(sa.select(table).where(table.c.id == ident)).mappings().first()
                 if ident is not None else None for table, ident in wanted]
    return tuple(dict(row) if row is not None else None for row in found)  # type: ignore[return-value]


def catalog(engine: Engine) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(models, accelerators) through one connection: opening a DuckDB connection costs about 10 ms, as much as
    reading both tables."""
    with _connection(engine, write=False) as conn:
        return _frame(conn, _models_select()), _frame(conn, _accelerators_select())


def sources(engine: Engine) -> pl.DataFrame:
    """Every source with the number of result rows it backs."""
    s, r = schema.source, schema.result
    n = sa.select(r.c.source_id, sa.func.count().label("n_results")).group_by(r.c.source_id).subquery()
    stmt = (
        sa.select(*s.c, sa.func.coalesce(n.c.n_results, 0).label("n_results"))
        .select_from(s.outerjoin(n, n.c.source_id == s.c.id))
        .order_by(s.c.id)
    )
    return query(engine, stmt)


def write_stamp(engine: Engine) -> str | None:
    """The store's write stamp (perfledger.store.stamp), asked once per `reading()` block; None for a store made
    before stamps and not written to since."""
    url = engine.url.render_as_string(hide_password=False)
    try:
        with _connection(engine, write=False) as conn:
            answers = answers_for(conn)
            if answers is not None and _STAMP in answers:
                known: str | None = answers[_STAMP]
                return known
            stamp = read_stamp(conn, table_known=url in _STAMPED)
            if answers is not None:
                answers[_STAMP] = stamp
    except StoreNotInitialised:  # the table was there and is not now (a rebuild): look for it again next time
        _STAMPED.discard(url)
        return None
    if stamp is not None:
        _STAMPED.add(url)
    return stamp


_STAMP = ("write stamp",)
_STAMPED: set[str] = set()  # stores seen with a stamp table: a page render then reads its row and nothing else


def has_data(engine: Engine) -> bool:
    """True when any result or run is stored; False when there is none or the tables do not exist yet.

    One EXISTS query: the pages ask this on every render (counting rows and inspecting the schema took 0.15 s).
    """
    stmt = sa.select(sa.or_(sa.exists(sa.select(schema.result.c.id)), sa.exists(sa.select(schema.run.c.id))))
    try:
        with _connection(engine, write=False) as conn:
            return bool(conn.scalar(stmt))
    except StoreNotInitialised:
        return False


def counts(engine: Engine) -> dict[str, int]:
    """Row counts per table: what the ledger holds."""
    with _connection(engine, write=False) as conn:
        present = set(sa.inspect(conn).get_table_names())  # a store of an earlier release lacks the newer tables
        held = {t.name: int(conn.scalar(sa.select(sa.func.count()).select_from(t)) or 0) if t.name in present else 0
                for t in schema.TABLES}
    lake = lake_of(engine)
    if lake is not None:
        held[schema.step.name] = lake_steps.count_steps(lake)
    return held


def find_run(engine: Engine, content_sha256: str) -> int | None:
    with _connection(engine, write=False) as conn:
        return conn.scalar(sa.select(schema.run.c.id).where(schema.run.c.content_sha256 == content_sha256))


def run(engine: Engine, run_id: int) -> RunRow | None:
    with _connection(engine, write=False) as conn:
        columns = [c for c in schema.run.c if c.name != "ran_at"]
        row = conn.execute(sa.select(*columns, run_date(conn)).where(schema.run.c.id == run_id)).mappings().first()
    return None if row is None else _run_row(dict(row))


def runs_of_format(engine: Engine, fmt: str) -> list[RunRow]:
    """Every stored run of one log format, whole (configuration and summary), newest first: one query."""
    r = schema.run
    with _connection(engine, write=False) as conn:
        columns = [c for c in r.c if c.name != "ran_at"]
        rows = conn.execute(sa.select(*columns, run_date(conn)).where(r.c.format == fmt)
                            .order_by(r.c.id.desc())).mappings().all()
    return [_run_row(dict(row)) for row in rows]


_EARLIER_WORKLOADS = {"lora": Workload.LORA_FINETUNE.value}  # run workloads stored before they were the vocabulary's


def _config(text: str | None) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(text or "{}")
    earlier = config.get("workload") in _EARLIER_WORKLOADS
    return config | {"workload": _EARLIER_WORKLOADS[config["workload"]]} if earlier else config


def _run_row(data: dict[str, Any]) -> RunRow:
    return RunRow(
        **{k: data[k] for k in ("id", "content_sha256", "format", "file_name", "file_bytes")},
        ingested_at=_utc(data["ingested_at"]),
        n_steps=data["n_steps"],
        skipped_lines=data["skipped_lines"],
        config=_config(data["config"]),
        warnings=json.loads(data["warnings"] or "[]"),
        summary=json.loads(data["summary"]) if data["summary"] else None,
        source_id=data["source_id"],
        note=data["note"],
        ran_at=_utc(data["ran_at"]) if data.get("ran_at") is not None else None,
    )


def steps(engine: Engine, run_id: int) -> pl.DataFrame:
    s = schema.step
    stmt = sa.select(*[s.c[name] for name in STEP_COLUMNS]).where(s.c.run_id == run_id).order_by(s.c.step)
    return _steps_query(engine, stmt, run_id)


def _steps_query(engine: Engine, stmt: sa.Select[Any], run_id: int) -> pl.DataFrame:
    """A select of one run's steps: from the store, or through DuckDB from the lake that holds them (remembered for
    the `reading()` block as the store's answers are)."""
    lake = lake_of(engine)
    if lake is None:
        return query(engine, stmt)
    target = {c.name: polars_type(c) for c in stmt.selected_columns}
    answers = block_answers()
    key = ("lake steps", lake.url, run_id, tuple(target))
    if answers is not None and key in answers:
        known: pl.DataFrame = answers[key]
        return known
    frame = lake_steps.read_steps(lake, run_id, list(target))
    frame = pl.DataFrame(schema=target) if frame.height == 0 else cast_to(frame, target)
    if answers is not None:
        answers[key] = frame
    return frame


def write_step_files(engine: Engine, run_id: int, folder: Path, *, batch_rows: int = 200_000) -> list[Path]:
    """Every step of a run, in step order, written to Parquet files in `folder` a batch at a time: a run of
    millions of steps read without holding it (DuckDB sorts it under a memory limit)."""
    s = schema.step
    stmt = sa.select(*[s.c[name] for name in STEP_COLUMNS]).where(s.c.run_id == run_id).order_by(s.c.step)
    target = {c.name: polars_type(c) for c in stmt.selected_columns}
    files: list[Path] = []
    lake = lake_of(engine)
    if lake is not None:  # DuckDB reads the lake's files in order, its sort spilling to the lake's spool
        for frame in lake_steps.step_batches(lake, list(target), run_id=run_id, batch_rows=batch_rows):
            files.append(folder / f"{len(files):08d}.parquet")
            cast_to(frame, target).write_parquet(files[-1], compression="lz4", statistics=False)
        return files
    with _connection(engine, write=False) as conn, _sorting_under_limit(conn):
        if conn.dialect.name == "duckdb":
            batches: Iterator[pl.DataFrame] = (cast_to(pl.from_arrow(b), target)  # type: ignore[arg-type]
                                               for b in conn.execute(stmt).cursor.to_arrow_reader(batch_rows))
        else:  # every step column is a number, and the run id has a literal form
            batches = pg_copy.copied_batches(conn, str(pg_copy.literal_sql(conn, stmt)), target, batch_rows)
        for frame in batches:
            files.append(folder / f"{len(files):08d}.parquet")
            frame.write_parquet(files[-1], compression="lz4", statistics=False)
    return files


SORT_MEMORY = "64MB"  # DuckDB's memory for ordering a long run's steps (10 M steps held 1.4 GB unbounded)


@contextmanager
def _sorting_under_limit(conn: Connection) -> Iterator[None]:
    """On DuckDB: the block's queries under SORT_MEMORY (a sort spills to DuckDB's temporary directory), the limit
    put back after. The temporary directory itself cannot change once a connection of the process used it."""
    if conn.dialect.name != "duckdb":
        yield
        return
    before = conn.exec_driver_sql("SELECT current_setting('memory_limit')").scalar()
    conn.exec_driver_sql(f"SET memory_limit = '{SORT_MEMORY}'")
    try:
        yield
    finally:
        conn.exec_driver_sql("RESET memory_limit")  # then by value: RESET alone leaves the buffer pool lowered
        conn.exec_driver_sql(f"SET memory_limit = '{before}'")


def step_times(engine: Engine, run_id: int) -> pl.DataFrame:
    """Only the columns the steady-state rule needs, for big runs."""
    s = schema.step
    stmt = sa.select(s.c.step, s.c.step_time_s, s.c.tokens).where(s.c.run_id == run_id).order_by(s.c.step)
    return _steps_query(engine, stmt, run_id)


def _utc(value: datetime) -> datetime:
    """The same instant in UTC, whatever time zone the engine's session uses (PostgreSQL: the server's)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
