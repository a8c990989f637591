"""The store's tables: created, dropped, looked for, and filled from data/ (init, rebuild)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema
from perfledger.records import InitReport
from perfledger.store.catalog_table import add_alias_columns, fill_aliases
from perfledger.store.engine import connection
from perfledger.store.runs import add_missing_columns
from perfledger.store.write import insert_missing, insert_results


def create_schema(engine: Engine) -> None:
    with connection(engine, write=True) as conn:
        schema.metadata.create_all(conn)
        add_missing_columns(conn)
        add_alias_columns(conn)


def drop_schema(engine: Engine) -> None:
    with connection(engine, write=True) as conn:
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
