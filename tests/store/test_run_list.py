"""The run list takes each run's listed figures out of its JSON in the store: it fetches a few values per run,
never a run's whole configuration or summary, and reads each figure as the parsed JSON holds it.

Tests taking `store_engine` run once per backend (tests/conftest.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema, store
from perfledger.store.run_list import RUN_LIST_FIELDS

# (config, summary) as a run row holds them: JSON text, an empty summary, a run with none.
STORED: list[tuple[dict[str, Any], str | None]] = [
    ({"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "precision": "bf16", "seq_len": 4096},
     json.dumps({"step_time_s_median": 1.5, "tokens_per_s_per_device": 4000, "model_tflops_per_device": 401.23456789012345,
                 "mfu": 0.40123, "jitter_cv": 1e-300, "launches": [{"launch": 1, "steps": 10}]})),
    ({"model": None, "n_devices": 8.7, "precision": 16}, json.dumps({"mfu": "0.5", "jitter_cv": None})),
    ({"accelerator": "mi300x", "n_devices": "16"}, None),
    ({}, ""),
]
# What the list shows for each, in the order of RUN_LIST_FIELDS: a fraction read as a whole number truncates,
# numeric text reads as its number, any other value as text.
LISTED = [
    ("llama2-7b", "h100-sxm", 8, "bf16", 1.5, 4000.0, 401.23456789012345, 0.40123, 1e-300),
    (None, None, 8, "16", None, None, None, 0.5, None),
    (None, "mi300x", 16, None, None, None, None, None, None),
    (None, None, None, None, None, None, None, None, None),
]


def _store_runs(engine: Engine) -> None:
    with engine.begin() as conn:
        for i, (config, summary) in enumerate(STORED, start=1):
            conn.execute(sa.insert(schema.run).values(
                id=i, content_sha256=f"{i:064d}", format="megatron", file_name=f"run{i}.log", file_bytes=1,
                ingested_at=datetime(2026, 1, i, tzinfo=UTC), config=json.dumps(config), warnings="[]",
                summary=summary, n_steps=10, skipped_lines=0))


def test_the_run_list_reads_each_figure_as_the_runs_json_holds_it(store_engine: Engine) -> None:
    _store_runs(store_engine)
    listed = store.runs(store_engine)
    assert listed["id"].to_list() == [4, 3, 2, 1]
    assert listed.select(list(RUN_LIST_FIELDS)).reverse().rows() == LISTED
    assert {str(listed.schema[name]) for name in ("mfu", "n_devices", "model")} == {"Float64", "Int64", "String"}


def test_the_run_list_fetches_no_runs_whole_configuration_or_summary(store_engine: Engine) -> None:
    _store_runs(store_engine)
    fetched: list[set[str]] = []

    def columns_of(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        fetched.append({str(d[0]) for d in cursor.description or ()})

    sa.event.listen(store_engine, "after_cursor_execute", columns_of)
    try:
        assert store.runs(store_engine).height == len(STORED)
    finally:
        sa.event.remove(store_engine, "after_cursor_execute", columns_of)
    assert any("file_name" in names for names in fetched)
    assert not any({"config", "summary"} & names for names in fetched)  # before: both, for every run
