"""The run page of a run of any length renders, every chart drawn from a bounded number of rows: the run page
crashed with altair's MaxRowsError from about 2,600 steps (two series of 4,000 envelope points each), and a
10-million-step run took 12-20 s and 4.1 GB of the server's memory. The long run here has twice the steps from
which the page reads a run in streaming passes (perfledger.views.long_runs), written by one SQL insert; the page's
time and memory at 10 M steps are bench/README.md's."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from ingest.spool import StepSpool
from perfledger import schema, step_charts, store
from perfledger.records import STEP_SCHEMA, PreparedRun
from perfledger.views import long_runs as long_view
from perfledger.views import runs as rv
from perfledger.vocabulary import LogFormat
from tests.screens.conftest import APP

LENGTHS = (10_000, 2 * long_view.LONG_RUN_STEPS)
RENDER_TIMEOUT_S = 300  # 10 M steps on a loaded 2-core machine: 80 s; idle, about 20


def _steps(n: int) -> pl.DataFrame:
    """n steps of 8 devices' tokens, step time, loss and the log's own figures; one stall, warm-up first."""
    rng = np.random.default_rng(n)
    step_time = 1.0 + rng.random(n) * 0.05
    step_time[: n // 20] *= 3.0
    step_time[n * 2 // 3] = 40.0
    frame = pl.DataFrame({"step": np.arange(1, n + 1), "step_time_s": step_time,
                          "tokens": np.full(n, 8 * 4096 * 16, dtype=np.float64),
                          "loss": 10.0 - np.log1p(np.arange(n)) / 3,
                          "reported_tflops_per_device": 400.0 + rng.random(n),
                          "reported_mfu": 0.40 + rng.random(n) / 100,
                          "reported_tokens_per_s_per_device": 65_000.0 + rng.random(n)})
    return frame.with_columns(pl.lit(None, dtype).alias(c) for c, dtype in STEP_SCHEMA.items()
                              if c not in frame.columns).select(list(STEP_SCHEMA))


def _store_run(engine: Any, n: int) -> int:
    """n steps written as an ingest writes them: spooled in 25,000-step Parquet files, inserted in bulk."""
    if n > long_view.LONG_RUN_STEPS:
        return _bulk_run(engine, n)
    spool = StepSpool()
    for frame in _steps(n).iter_slices(25_000):
        spool.add(frame)
    prepared = PreparedRun(
        file_name=f"long-{n}.log", format=LogFormat("megatron"), content_sha256=f"{n:064x}", file_bytes=1,
        config=RUN_CONFIG, summary=RUN_SUMMARY,
        steps=spool.step_files(), release=spool.close)
    with prepared:
        return store.save_run(engine, prepared).run_id


RUN_CONFIG = {"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "precision": "bf16"}
RUN_SUMMARY = {"flops_per_token": 4.6e10, "model_tflops_per_device": 400.0, "mfu": 0.4}


def _bulk_run(engine: Any, n: int) -> int:
    """n steps as _steps() draws them (warm-up 3x slower, one stall at two thirds), written by one INSERT ... SELECT
    FROM range(n) in DuckDB: seconds instead of the minutes of spooling them."""
    with engine.begin() as conn:
        run_id = int(conn.execute(sa.insert(schema.run).values(
            content_sha256=f"{n:064x}", format="megatron", file_name=f"long-{n}.log", file_bytes=1,
            ingested_at=datetime.now(UTC), config=json.dumps(RUN_CONFIG), warnings="[]",
            summary=json.dumps(RUN_SUMMARY), n_steps=n, skipped_lines=0).returning(schema.run.c.id)).scalar_one())
        conn.exec_driver_sql("SET memory_limit = '64MB'; SET threads = 1; SELECT setseed(0.5)")
        conn.exec_driver_sql(
            "INSERT INTO step (run_id, step, step_time_s, tokens, loss, reported_tflops_per_device, reported_mfu, "
            f"reported_tokens_per_s_per_device) SELECT {run_id}, i + 1, (1.0 + random() * 0.05) * "
            f"(CASE WHEN i < {n // 20} THEN 3.0 ELSE 1.0 END) + (CASE WHEN i = {n * 2 // 3} THEN 39.0 ELSE 0 END), "
            f"524288.0, 10.0 - ln(1 + i) / 3, 400.0 + random(), 0.40 + random() / 100, 65000.0 + random() "
            f"FROM range({n}) t(i)")
    return run_id


@pytest.fixture(scope="module")
def long_runs(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """A copy of the seeded store holding a 10,000-step run and a long one; steps -> id."""
    folder = tmp_path_factory.mktemp("long-runs")
    path = folder / "perfledger.duckdb"
    shutil.copy(seeded_db, path)
    engine = store.engine_from_url(f"duckdb:///{path}")
    ids = {n: _store_run(engine, n) for n in LENGTHS}
    engine.dispose()
    return path, ids


@pytest.fixture()
def run_ids(long_runs: tuple[Path, dict[int, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, int]]:
    shutil.copy(long_runs[0], tmp_path / "perfledger.duckdb")
    monkeypatch.setenv("PERFLEDGER_DB_URL", f"duckdb:///{tmp_path / 'perfledger.duckdb'}")
    yield long_runs[1]


def _chart_rows(at: AppTest) -> list[tuple[str, int]]:
    """Each drawn chart's title and the rows of its largest dataset (Streamlit sends each as Arrow)."""
    rows = []
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        title = spec.get("title", {})
        name = title.get("text") if isinstance(title, dict) else str(title)
        sizes = [pl.read_ipc_stream(io.BytesIO(d.data.data)).height for d in element.proto.datasets]
        rows.append((name, max(sizes, default=0)))
    return rows


def _open(slug: str, query: str) -> AppTest:
    """tests.screens.conftest's open_page, with the time a 10 M-step run's first render needs."""
    from perfledger.views.registry import PAGES

    at = AppTest.from_file(APP, default_timeout=RENDER_TIMEOUT_S).switch_page(next(p.file for p in PAGES if p.slug == slug))
    at.query_params.update(dict(kv.split("=", 1) for kv in query.split("&")))
    return at.run()


def _metric(at: AppTest, label: str) -> str:
    return next(str(m.value) for m in at.metric if m.label == label)


@pytest.mark.long
@pytest.mark.parametrize("n", LENGTHS)
def test_the_run_page_of_a_long_run_renders_every_chart_within_the_row_bound(n: int, run_ids: dict[int, int]) -> None:
    at = _open("runs", f"run={run_ids[n]}")
    assert not at.exception, [e.value for e in at.exception]
    rows = _chart_rows(at)
    assert len(rows) >= 5, rows  # step time, tokens/s, TFLOP/s, MFU, loss
    assert all(0 < r <= step_charts.MOST_POINTS for _, r in rows), rows
    # the figures count every step: all but the warm-up (10%) and the one stall
    assert _metric(at, "Steady steps") == f"{n - n // 10 - 1:,}"
    assert at.button, "the page stopped before its Delete panel"


@pytest.mark.long
def test_two_long_runs_overlaid_draw_within_the_row_bound(run_ids: dict[int, int]) -> None:
    at = _open("runs", f"run={run_ids[LENGTHS[0]]}&vs={run_ids[LENGTHS[1]]}")
    assert not at.exception, [e.value for e in at.exception]
    rows = _chart_rows(at)
    assert len(rows) >= 10, rows
    assert all(0 < r <= step_charts.MOST_POINTS for _, r in rows), rows


@pytest.fixture(scope="module")
def short_run(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, int]:
    """A copy of the seeded store with a 10,000-step run: its engine and the run's id."""
    path = tmp_path_factory.mktemp("short-run") / "perfledger.duckdb"
    shutil.copy(seeded_db, path)
    engine = store.engine_from_url(f"duckdb:///{path}")
    return engine, _store_run(engine, 10_000)


def test_a_run_read_in_streaming_passes_gives_the_figures_and_extremes_of_the_run_read_whole(
        short_run: tuple[Any, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The long-run path (perfledger.views.long_runs) on a run short enough to read whole: the same steady state,
    the same phase, tokens seen and wall clock on every drawn row, and each figure's extremes drawn."""
    engine, run_id = short_run
    state = rv.RunsView(run=run_id)
    whole = rv.run_steps(state, engine, run_id)
    monkeypatch.setattr(long_view, "LONG_RUN_STEPS", 1_000)
    drawn = rv.run_steps(state, engine, run_id)
    assert drawn.height < whole.height and drawn.columns == whole.columns
    streamed, held = rv.page_summary(state, engine, drawn), rv.run_summary(state, whole)
    assert streamed is not None and held is not None
    summed = ("jitter_cv", "tokens_per_s")  # sums in another order: equal to rounding (calc.steady)
    assert [getattr(streamed, f) for f in summed] == pytest.approx([getattr(held, f) for f in summed], rel=1e-12)
    assert dataclasses.replace(streamed, **dict.fromkeys(summed)) == dataclasses.replace(held, **dict.fromkeys(summed))
    same = drawn.join(whole, on="step", suffix="_whole")
    for column in ("phase", "tokens_seen", "elapsed_s", "loss"):
        assert (same[column] == same[f"{column}_whole"]).all(), column
    for column in rv.drawn_columns():
        assert (drawn[column].min(), drawn[column].max()) == (whole[column].min(), whole[column].max()), column
