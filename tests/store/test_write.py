"""A write reads what it adds: storing results asks the store only for the keys of the rows it brings."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema, store
from perfledger.records import ResultRecord
from perfledger.store.write import insert_results

STORED = 3_000


def _record(i: int) -> ResultRecord:
    return ResultRecord(metric="step_time_s", value=float(i), unit="s")


def _rows_returned(engine: Engine, reads: list[tuple[str, Any]]) -> int:
    """How many rows each traced SELECT returns from the store as it is now."""
    with engine.connect() as conn:
        return sum(int(conn.exec_driver_sql(f"SELECT count(*) FROM ({sql}) AS traced", params).scalar_one())
                   for sql, params in reads)


def test_storing_results_reads_the_keys_of_the_new_rows_only(store_engine: Engine) -> None:
    store.add_results(store_engine, [_record(i) for i in range(STORED)])
    reads: list[tuple[str, Any]] = []

    def trace(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "row_key" in statement:
            reads.append((statement, params))

    batch = [_record(5), _record(STORED + 1), _record(STORED + 2)]  # one already stored, two new
    sa.event.listen(store_engine, "before_cursor_execute", trace)
    try:
        with store_engine.connect() as conn:
            added = insert_results(conn, batch)
            conn.rollback()  # the traced reads are counted against the store they read
    finally:
        sa.event.remove(store_engine, "before_cursor_execute", trace)
    assert added == 2
    assert reads
    assert _rows_returned(store_engine, reads) <= len(batch)  # before: every stored key, 3,000 rows


def test_results_already_stored_are_skipped_across_key_batches(store_engine: Engine) -> None:
    first = [_record(i) for i in range(1_200)]  # more keys than one IN list holds
    assert store.add_results(store_engine, first) == 1_200
    assert store.add_results(store_engine, [*first, _record(-1)]) == 1
    with store_engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(schema.result)) == 1_201
