"""A run's page reads what it shows: its step table and the nearest claims each read through one connection, and
the claims read the published rows of the run's model and accelerator, in the columns the table shows.

Tests taking `store_engine` run once per backend (tests/conftest.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema, views
from perfledger.views import runs as rv
from perfledger.views.remembered import forget

RUN = 7
PUBLISHED, OWN = 3, 2  # published claims of the run's model and accelerator, result rows the run itself produced


def _store_run_and_claims(engine: Engine) -> None:
    config = {"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "framework": "megatron"}
    claim = {"metric": "tokens_per_s_per_device", "unit": "tokens/s/device", "evidence": "vendor claim",
             "model_id": "llama2-7b", "accelerator_id": "h100-sxm", "n_devices": 8, "source_id": None, "run_id": None}
    with engine.begin() as conn:
        conn.execute(sa.insert(schema.run).values(
            id=RUN, content_sha256="0" * 64, format="megatron", file_name="run.log", file_bytes=1,
            ingested_at=datetime(2026, 1, 1, tzinfo=UTC), config=json.dumps(config), warnings="[]",
            summary=json.dumps({"tokens_per_s_per_device": 4000.0}), n_steps=20, skipped_lines=0))
        conn.execute(sa.insert(schema.step), [{"run_id": RUN, "step": s, "step_time_s": 1.5, "tokens": 4096.0}
                                              for s in range(1, 21)])
        rows = [claim | {"value": 3000.0 + i, "source_id": "vendor"} for i in range(PUBLISHED)]
        rows += [claim | {"value": 4000.0 + i, "run_id": RUN, "evidence": "measured"} for i in range(OWN)]
        rows += [claim | {"value": 1.0, "model_id": "llama3-8b"}, claim | {"value": 2.0, "accelerator_id": "mi300x"}]
        conn.execute(sa.insert(schema.result), [r | {"row_key": f"{i:064d}"} for i, r in enumerate(rows)])


@contextmanager
def traced(engine: Engine) -> Iterator[tuple[list[object], list[tuple[str, Any, set[str]]]]]:
    """The connections opened and the statements run (with the columns each returned) inside the block."""
    connections: list[object] = []
    statements: list[tuple[str, Any, set[str]]] = []

    def on_connect(dbapi_connection: object, record: object) -> None:
        connections.append(dbapi_connection)

    def on_execute(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        statements.append((statement, params, {str(d[0]) for d in cursor.description or ()}))

    sa.event.listen(engine, "connect", on_connect)
    sa.event.listen(engine, "after_cursor_execute", on_execute)
    try:
        yield connections, statements
    finally:
        sa.event.remove(engine, "connect", on_connect)
        sa.event.remove(engine, "after_cursor_execute", on_execute)


def _rows_returned(engine: Engine, reads: list[tuple[str, Any, set[str]]]) -> int:
    with engine.connect() as conn:
        return sum(int(conn.exec_driver_sql(f"SELECT count(*) FROM ({sql}) AS traced", params).scalar_one())
                   for sql, params, _ in reads)


def test_the_nearest_claims_read_the_published_rows_in_the_columns_shown(store_engine: Engine) -> None:
    _store_run_and_claims(store_engine)
    with traced(store_engine) as (_, statements):
        claims = views.nearest_claims(store_engine, RUN)
    assert claims["figure from"].to_list().count("published") == PUBLISHED
    reads = [s for s in statements if "FROM result" in s[0]]
    assert _rows_returned(store_engine, reads) == PUBLISHED + OWN  # before: the run's own rows twice
    shown = set(rv.CLAIM_COLUMNS) | {"evidence", "note"}  # and the run's own figures (run_figures)
    assert all(columns <= shown for _, _, columns in reads)  # before: every result column and the three names


def test_a_run_pages_step_table_and_claims_open_one_connection_each(store_engine: Engine) -> None:
    _store_run_and_claims(store_engine)
    forget()
    with traced(store_engine) as (connections, _):
        steps = views.table("runs", rv.RunsView(run=RUN), store_engine)
    assert steps.height == 20
    assert len(connections) == 1  # before: 4 (the write stamp, the run twice, its steps)
    with traced(store_engine) as (connections, _):
        views.nearest_claims(store_engine, RUN)
    assert len(connections) == 1  # before: 3
