"""The store's tables: created, dropped, looked for, and filled from data/ (init, rebuild)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.errors import StoreError
from perfledger.records import InitReport
from perfledger.store.catalog_table import add_alias_columns, fill_aliases, fill_colours
from perfledger.store.engine import connection
from perfledger.store.lake import LakeSpec, lake_of
from perfledger.store.lake_steps import create_step_table, drop_step_table, sweep_orphans
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
    """The store's tables, made where missing; a DuckLake store's step table in its lake (lake_steps)."""
    lake = lake_of(engine)
    with connection(engine, write=True) as conn:
        one_initialiser_at_a_time(conn)
        if lake is not None:
            _refuse_steps_in_the_ledger(conn, lake)
        schema.metadata.create_all(conn, tables=[t for t in schema.metadata.sorted_tables
                                                if lake is None or t is not schema.step])
        add_missing_columns(conn)
        add_alias_columns(conn)
        if lake is not None:
            create_step_table(lake)


def _refuse_steps_in_the_ledger(conn: Connection, lake: LakeSpec) -> None:
    """StoreError when the database a DuckLake URL names keeps steps of its own (a store made with a postgresql
    URL): the lake would hide them."""
    if sa.inspect(conn).has_table(schema.step.name):
        raise StoreError(lake.shown, "this database keeps its steps in its own step table; to keep them in a "
                                     "DuckLake, copy the store into a new database: python -m perfledger copy "
                                     "--from ITS_URL --to THE_DUCKLAKE_URL_OF_THE_NEW_DATABASE")


def drop_schema(engine: Engine) -> None:
    lake = lake_of(engine)
    with connection(engine, write=True) as conn:
        one_initialiser_at_a_time(conn)
        schema.metadata.drop_all(conn)
        if lake is not None:
            drop_step_table(lake)


def has_schema(engine: Engine) -> bool:
    with connection(engine, write=False) as conn:
        return sa.inspect(conn).has_table("result")


def init_store(engine: Engine, data_dir: Path) -> InitReport:
    """Create the tables and load data/ into them, in one transaction; a second call inserts nothing. A DuckLake
    store's steps whose run is not stored (a writer killed between its two commits) are swept (lake_steps)."""
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
        fill_colours(conn, seed.accelerators)
        inserted["result"] = insert_results(conn, seed.results)
        lake = lake_of(engine)
        if lake is not None:
            sweep_orphans(conn, lake)
    return InitReport(inserted, tuple(seed.unresolved))


def rebuild_store(engine: Engine, data_dir: Path) -> InitReport:
    """Drop every table and build the store again from data/ (ingested runs are lost: say so first)."""
    drop_schema(engine)
    return init_store(engine, data_dir)
