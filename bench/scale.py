"""bench/run.py --scale: a store the size of a large team's, on DuckDB and on PostgreSQL, built in bulk SQL.

    .venv/bin/python bench/run.py --scale [--backends duckdb,postgresql] [--scale-size RUNS,STEPS,RESULTS]

Per backend: data/ loaded through the store (`perfledger init`), then runs, steps and results added by one
INSERT ... SELECT over generate_series each (setup speed only: the ingest path is measured on its own), then
  (1) each page's table (perfledger.views.table, default state, nothing remembered) against the bare SQL of the
      same rows (store_pages.BARE_SQL, PostgreSQL spellings where DuckDB's differ) on a fresh connection;
  (2) one run's page (its steps labelled, steady state, stored figures, nearest claims) against the bare SQL
      of its steps and results;
  (3) `python -m ingest` of one more run (a Megatron log built from the fixtures) into the big store against
      the same ingest into a store holding data/ alone, each repeat a log of its own.
PostgreSQL is PERFLEDGER_BENCH_PG_URL (an admin URL; a database is created and dropped) or else a throwaway
cluster started from the server binaries by tests/postgres_server.py (fsync off, as in the tests).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from measure import ROOT, run_child, stats, timed
from store_pages import BARE_SQL, _computed_afresh

FULL = (10_000, 100_000_000, 1_000_000)
QUICK = (20, 20_000, 2_000)
INGEST_MB = 8
PG_ENV = "PERFLEDGER_BENCH_PG_URL"

# ------------------------------------------------------------------------------------------- building


def _dialect_sql(sql: str, dialect: str) -> str:
    return sql if dialect == "duckdb" else sql.replace("::VARCHAR", "::text")


def _grow_sql(n_runs: int, per_run: int, n_results: int, seeded: int, cols: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The INSERT ... SELECT statements that add runs, their steps and result rows (copies of the seeded ones,
    each with its own row key). Both engines read them: generate_series, md5, sin and row_number are common."""
    config = json.dumps({"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "precision": "bf16",
                         "seq_len": 4096, "global_batch": 128})
    summary = json.dumps({"first_step": 10, "last_step": per_run, "step_time_s_median": 1.5,
                          "tokens_per_s_per_device": 4000.0, "model_tflops_per_device": 400.0, "mfu": 0.4,
                          "jitter_cv": 0.05})
    copies = max(1, -(-(n_results - seeded) // max(seeded, 1)))
    return [
        ("""INSERT INTO run (id, content_sha256, format, file_name, file_bytes, ingested_at, config, warnings, summary,
                             n_steps, skipped_lines)
            SELECT i + :top, md5('bench-run-' || i::VARCHAR), 'megatron', 'bench_' || i::VARCHAR || '.log', 1000000,
                   now(), :config, '[]', :summary, :per_run, 0
            FROM generate_series(1, :n_runs) t(i)""",
         {"config": config, "summary": summary, "per_run": per_run, "n_runs": n_runs}),
        ("""INSERT INTO step (run_id, step, step_time_s, tokens, samples, loss, lr, grad_norm,
                              reported_tflops_per_device, reported_mfu, reported_tokens_per_s_per_device, memory_gb)
            SELECT r + :top, s, 1.5 + 0.1 * sin(s) + CASE WHEN s % 500 = 0 THEN 5 ELSE 0 END, 524288, 128,
                   10.0 / (1 + s / 100.0), 3e-4, 1.0 + 0.01 * cos(s), 400, 0.4, 4000, 60
            FROM generate_series(1, :n_runs) a(r), generate_series(1, :per_run) b(s)""",
         {"n_runs": n_runs, "per_run": per_run}),
        (f"""INSERT INTO result (id, row_key, {', '.join(cols)})
             SELECT row_number() OVER () + (SELECT max(id) FROM result),
                    md5(k::VARCHAR || '/' || r.row_key) || md5(r.row_key || '/' || k::VARCHAR),
                    {', '.join('r.' + c for c in cols)}
             FROM result r, generate_series(1, :copies) t(k)
             LIMIT :extra""",
         {"copies": copies, "extra": max(0, n_results - seeded)}),
    ]


def build(url: str, n_runs: int, n_steps: int, n_results: int) -> dict[str, Any]:
    """A store at `url` (new) with data/ and n_runs runs of n_steps // n_runs steps each and n_results results;
    the seconds each statement took, so a build too slow for a machine is measured, not guessed."""
    from perfledger import schema, store
    from perfledger.store.copy import _advance_id_sequence

    engine = store.engine_from_url(url)
    t0 = time.perf_counter()
    store.init_store(engine, ROOT / "data")
    dialect = engine.dialect.name
    per_run = max(1, n_steps // n_runs)
    cols = [c.name for c in schema.result.c if c.name not in ("id", "row_key")]
    seconds: dict[str, float] = {"init": time.perf_counter() - t0}
    with engine.begin() as conn:
        seeded = int(conn.scalar(sa.text("SELECT count(*) FROM result")) or 0)
        top = int(conn.scalar(sa.text("SELECT coalesce(max(id), 0) FROM run")) or 0)
    for name, (sql, params) in zip(("run", "step", "result"), _grow_sql(n_runs, per_run, n_results, seeded, cols), strict=True):
        t = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(sa.text(_dialect_sql(sql, dialect)), params | {"top": top})
        seconds[name] = time.perf_counter() - t
    with engine.begin() as conn:
        for table in (schema.run, schema.result):
            _advance_id_sequence(conn, table)
    t = time.perf_counter()
    _settle(engine)
    seconds["settle"] = time.perf_counter() - t
    with engine.connect() as conn:
        counts = {name: int(conn.scalar(sa.text(f"SELECT count(*) FROM {name}")) or 0) for name in ("run", "step", "result")}
        size = conn.scalar(sa.text("SELECT pg_database_size(current_database())")) if dialect == "postgresql" else None
    engine.dispose()
    if size is None:
        size = Path(sa.make_url(url).database or "").stat().st_size
    return counts | {"steps_per_run": per_run, "build_s": seconds, "total_s": time.perf_counter() - t0,
                     "size_gb": int(size) / 1e9, "biggest_run": top + 1}


def _init_only(url: str) -> None:
    from perfledger import store

    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()


def _settle(engine: sa.Engine) -> None:
    """What a store in use has had time for: PostgreSQL's statistics and visibility map (autovacuum's work),
    DuckDB's checkpoint."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM (ANALYZE)"))
    else:
        with engine.begin() as conn:
            conn.execute(sa.text("CHECKPOINT"))


# ------------------------------------------------------------------------------------------- measuring

# The PostgreSQL spelling of the bare SQL that uses DuckDB's own (EXCLUDE, json_extract).
_RESULT_COLUMNS = "r.id, r.source_id, r.run_id, r.accelerator_id, r.accelerator_as_printed, r.n_devices, r.framework, " \
    "r.framework_version, r.model_id, r.model_as_printed, r.workload, r.precision, r.seq_len, r.global_batch, " \
    "r.micro_batch, r.grad_accum, r.tp, r.pp, r.dp, r.ep, r.cp, r.strategy, r.sparsity, r.metric, r.value, r.unit, " \
    "r.evidence, r.locator, r.note, r.baseline, r.precision_as_printed, r.attributes"
_PG_RESULTS_SQL = BARE_SQL["speedups"].replace("r.* EXCLUDE (row_key)", _RESULT_COLUMNS)
PG_BARE_SQL = BARE_SQL | {slug: _PG_RESULTS_SQL for slug in ("speedups", "accelerators", "scaling", "audit")} | {
    "runs": """SELECT id, file_name, format, ingested_at, n_steps, skipped_lines,
                      config::json->>'model' AS model, config::json->>'accelerator' AS accelerator,
                      (config::json->>'n_devices')::BIGINT AS n_devices, config::json->>'precision' AS precision,
                      (summary::json->>'step_time_s_median')::float8 AS step_time_s_median,
                      (summary::json->>'tokens_per_s_per_device')::float8 AS tokens_per_s_per_device,
                      (summary::json->>'model_tflops_per_device')::float8 AS model_tflops_per_device,
                      (summary::json->>'mfu')::float8 AS mfu, (summary::json->>'jitter_cv')::float8 AS jitter_cv
               FROM run ORDER BY id DESC"""}
_RUN_SQL = ("""SELECT step, step_time_s, tokens, samples, loss, lr, grad_norm, reported_tflops_per_device,
                      reported_mfu, reported_tokens_per_s_per_device, memory_gb, launch
               FROM step WHERE run_id = {id} ORDER BY step""",
            "SELECT metric, value, unit, evidence, precision, n_devices, note FROM result WHERE run_id = {id}")


def _bare(url: str, sql: str) -> Any:
    """The rows of `sql` as a Polars frame, on a fresh connection of the plain driver (the store opens one per
    call too): DuckDB's Arrow result, PostgreSQL's COPY."""
    import polars as pl

    u = sa.make_url(url)
    if u.get_backend_name() == "duckdb":
        import duckdb

        with duckdb.connect(u.database or "", read_only=True) as con:
            return con.execute(sql).pl()
    import psycopg

    # COPY out as CSV, read by Polars: the fastest plain way from PostgreSQL to a frame (row tuples through the
    # driver took 5-20x longer than the page's own read).
    buf = io.BytesIO()
    with psycopg.connect(u.set(drivername="postgresql").render_as_string(hide_password=False)) as pg, \
            pg.cursor() as cur, cur.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
        for block in copy:
            buf.write(block)
    return pl.read_csv(buf.getvalue(), infer_schema_length=None)


def run_page(engine: sa.Engine, run_id: int) -> int:
    """What the Runs page computes for one run (the page script's calls, without Streamlit), on one connection as
    the dashboard runs every page (dashboard.py: `with store.reading()`)."""
    from perfledger import store, views
    from perfledger.views import runs as rv

    with store.reading():
        state = rv.RunsView(run=run_id)
        steps = _computed_afresh("runs", state, engine)
        row = rv.stored_run(engine, run_id)
        views.run_summary(state, steps)
        rv.run_figures(engine, row)
        views.printed_vs_recomputed(engine, run_id)
        views.nearest_claims(engine, run_id)
    return int(steps.height)


def measure_pages(url: str, run_id: int, repeats: int) -> dict[str, Any]:
    from perfledger import store, views

    bare_sql = PG_BARE_SQL if url.startswith("postgresql") else BARE_SQL
    engine = store.engine_from_url(url)
    out: dict[str, Any] = {}
    for slug in (s for s in views.SLUGS if s in bare_sql):  # a page with no bare SQL to hold it against: left out
        state = views.PAGE_STATES[slug]()
        t_view, frame = timed(partial(_computed_afresh, slug, state, engine), repeats)
        t_sql, ref = timed(partial(_bare, url, bare_sql[slug]), repeats)
        out[slug] = {"view_s": t_view, "sql_s": t_sql, "rows": frame.height, "sql_rows": ref.height,
                     "ratio": t_view["median"] / t_sql["median"]}
    t_view, n = timed(partial(run_page, engine, run_id), repeats)
    t_sql, _ = timed(lambda: [_bare(url, sql.format(id=int(run_id))) for sql in _RUN_SQL], repeats)
    out[f"run {run_id}"] = {"view_s": t_view, "sql_s": t_sql, "rows": n, "ratio": t_view["median"] / t_sql["median"]}
    engine.dispose()
    return out


def measure_ingest(big_url: str, small_url: str, work: Path, repeats: int) -> dict[str, Any]:
    """`python -m ingest` of one more run into the big store against the same into a store of data/ alone;
    each repeat ingests a log of its own (a stored log is recognised and not stored twice)."""
    import inputs

    base = work / "one_more_run.log"
    if not base.exists():
        inputs.build("megatron", INGEST_MB * 10**6, base)
    out: dict[str, Any] = {"file_mb": base.stat().st_size / 1e6}
    for name, url in (("small_store", small_url), ("big_store", big_url)):
        times = []
        for i in range(repeats):
            log = work / f"one_more_run_{name}_{i}.log"
            log.write_bytes(base.read_bytes() + f"bench copy {uuid.uuid4()}\n".encode())
            seconds, _, code, text = run_child([sys.executable, "-m", "ingest", str(log), "--db", url, "--json"])
            log.unlink()
            if code:
                raise SystemExit(f"ingest into {name} failed ({code}):\n{text[-2000:]}")
            out.setdefault("steps", json.loads(text.splitlines()[0])["steps"])
            times.append(seconds)
        out[name] = {"seconds": stats(times)}
    out["ratio"] = out["big_store"]["seconds"]["median"] / out["small_store"]["seconds"]["median"]
    return out


# ------------------------------------------------------------------------------------------- running


@contextmanager
def _postgres() -> Iterator[Any]:
    """An admin server: PG_ENV's, or a throwaway cluster (tests/postgres_server.py)."""
    from tests.postgres_server import server_from_url, temporary_server

    if os.environ.get(PG_ENV):
        yield server_from_url(os.environ[PG_ENV])
        return
    with temporary_server() as server:
        yield server


def bench_scale(backends: list[str], size: tuple[int, int, int], work: Path, repeats: int) -> dict[str, Any]:
    """Per backend: the big store built, its pages and one run's page measured, one more run ingested."""
    out: dict[str, Any] = {"size": dict(zip(("runs", "steps", "results"), size, strict=True))}
    for backend in backends:
        with ExitStack() as stack:
            if backend == "duckdb":
                big, small = (f"duckdb:///{work / name}" for name in ("scale.duckdb", "small.duckdb"))
            else:
                server = stack.enter_context(_postgres())
                names = [f"perfledger_bench_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("big", "small")]
                for name in names:
                    stack.callback(server.drop_database, name)
                big, small = (server.create_database(name) for name in names)
            built = build(big, *size)
            _init_only(small)
            out[backend] = {"store": built, "pages": measure_pages(big, built["biggest_run"], repeats),
                            "ingest": measure_ingest(big, small, work, repeats)}
            if backend == "duckdb":
                for name in ("scale.duckdb", "small.duckdb"):
                    (work / name).unlink(missing_ok=True)
    return out


def print_scale(r: dict[str, Any]) -> None:
    size = r["size"]
    print(f"\nscale: {size['runs']:,} runs, {size['steps']:,} steps, {size['results']:,} results, built in bulk SQL")
    for backend in (b for b in ("duckdb", "postgresql") if b in r):
        b = r[backend]
        st = b["store"]
        print(f"\n{backend}: {st['run']:,} runs, {st['step']:,} steps, {st['result']:,} results, "
              f"{st['size_gb']:.1f} GB, built in {st['total_s']:.0f} s ("
              + ", ".join(f"{k} {v:.0f} s" for k, v in st["build_s"].items()) + ")")
        print(f"  {'page table':<22} {'table s':>9} {'bare SQL s':>11} {'ratio':>7} {'rows':>10}")
        for name, p in b["pages"].items():
            print(f"  {name:<22} {p['view_s']['median']:>9.3f} {p['sql_s']['median']:>11.3f} {p['ratio']:>6.2f}x"
                  f" {p['rows']:>10,}")
        i = b["ingest"]
        print(f"  ingest of one more run ({i['file_mb']:.0f} MB Megatron, {i['steps']:,} steps): "
              f"{i['big_store']['seconds']['median']:.2f} s into this store, "
              f"{i['small_store']['seconds']['median']:.2f} s into a store of data/ alone: {i['ratio']:.2f}x")
