"""The store's tables: created, dropped, looked for, and filled from data/ (init, rebuild)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.records import InitReport
from perfledger.store.catalog_table import add_alias_columns, fill_aliases
from perfledger.store.engine import connection
from perfledger.store.runs import add_missing_columns
from perfledger.store.write import insert_missing, insert_results

# PostgreSQL's advisory lock that `init` (and `rebuild`, `copy`) hold while creating tables and loading data/: three
# `perfledger init` started together on a new database failed one or two of three ("duplicate key value violates
# unique constraint pg_type_typname_nsp_index": CREATE TABLE is not safe to race). Any constant key works; this one
# reads "perfledg" in ASCII.
INIT_LOCK_KEY = 0x70657266_6C656467


def one_initialiser_at_a_time(conn: Connection) -> None:
    """Wait, inside `conn`'s transaction, until no other process creates or seeds this store (PostgreSQL; a DuckDB
    file has one writer at a time already). The lock goes with the transaction."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": INIT_LOCK_KEY})


def create_schema(engine: Engine) -> None:
    with connection(engine, write=True) as conn:
        one_initialiser_at_a_time(conn)
        schema.metadata.create_all(conn)
        add_missing_columns(conn)
        add_alias_columns(conn)


def drop_schema(engine: Engine) -> None:
    with connection(engine, write=True) as conn:
        one_initialiser_at_a_time(conn)
        schema.metadata.drop_all(conn)


def has_schema(engine: Engine) -> bool:
    with connection(engine, write=False) as conn:
        return sa.inspect(conn).has_table("result")


def init_store(engine: Engine, data_dir: Path) -> InitReport:
    """Create the tables and load data/ into them, in one transaction; a second call inserts nothing."""
    from perfledger.seed import load_seed  # the seed module reads CSVs; import here keeps queries light

    seed = load_seed(data_dir)
    create_schema(engine)
    inserted: dict[str, int] = {}
    with connection(engine, write=True) as conn:
        one_initialiser_at_a_time(conn)
        inserted["source"] = insert_missing(conn, schema.source, seed.sources)
        inserted["accelerator"] = insert_missing(conn, schema.accelerator, seed.accelerators)
        inserted["model"] = insert_missing(conn, schema.model, seed.models)
        fill_aliases(conn, "accelerator", seed.accelerators)
        fill_aliases(conn, "model", seed.models)
        inserted["result"] = insert_results(conn, seed.results)
    return InitReport(inserted, tuple(seed.unresolved))


def rebuild_store(engine: Engine, data_dir: Path) -> InitReport:
    """Drop every table and build the store again from data/ (ingested runs are lost: say so first)."""
    drop_schema(engine)
    return init_store(engine, data_dir)
