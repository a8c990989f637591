"""The run page of a run of any length renders, every chart drawn from a bounded number of rows: the run page
crashed with altair's MaxRowsError from about 2,600 steps (two series of 4,000 envelope points each)."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from ingest.spool import StepSpool
from perfledger import charts, store
from perfledger.records import STEP_SCHEMA, PreparedRun
from perfledger.vocabulary import LogFormat

LENGTHS = (10_000, 2_000_000)


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
    spool = StepSpool()
    for frame in _steps(n).iter_slices(25_000):
        spool.add(frame)
    prepared = PreparedRun(
        file_name=f"long-{n}.log", format=LogFormat("megatron"), content_sha256=f"{n:064x}", file_bytes=1,
        config={"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "precision": "bf16"},
        summary={"flops_per_token": 4.6e10, "model_tflops_per_device": 400.0, "mfu": 0.4},
        steps=spool.step_files(), release=spool.close)
    with prepared:
        return store.save_run(engine, prepared).run_id


@pytest.fixture(scope="module")
def long_runs(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """A copy of the seeded store holding a 10,000-step and a 2-million-step run (bulk-written); steps -> id."""
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


@pytest.mark.parametrize("n", LENGTHS)
def test_the_run_page_of_a_long_run_renders_every_chart_within_the_row_bound(
        n: int, run_ids: dict[int, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[n]}")
    assert not at.exception, [e.value for e in at.exception]
    rows = _chart_rows(at)
    assert len(rows) >= 5, rows  # step time, tokens/s, TFLOP/s, MFU, loss
    assert all(0 < r <= charts.MOST_POINTS for _, r in rows), rows
    assert at.button, "the page stopped before its Delete panel"


def test_two_long_runs_overlaid_draw_within_the_row_bound(run_ids: dict[int, int], open_page: Callable[..., AppTest]) -> None:
    at = open_page("runs", f"run={run_ids[10_000]}&vs={run_ids[2_000_000]}")
    assert not at.exception, [e.value for e in at.exception]
    rows = _chart_rows(at)
    assert len(rows) >= 10, rows
    assert all(0 < r <= charts.MOST_POINTS for _, r in rows), rows
