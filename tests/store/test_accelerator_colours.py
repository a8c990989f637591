"""A store made before accelerators had a colour gets the column at its first write and the bundled colours at
its next `init`; a colour a user set since is kept."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from perfledger import schema, store
from perfledger.chart_colours import bundled_colours
from perfledger.seed import load_seed
from perfledger.settings import DEFAULT_DATA_DIR


def _store_without_colours(path: Path) -> str:
    """A DuckDB store whose accelerator table has no colour column, holding the bundled accelerators."""
    old = sa.MetaData()
    for table in schema.TABLES:
        if table is schema.accelerator:
            sa.Table(table.name, old, *(c._copy() for c in table.columns if c.name != "colour"))
        else:
            table.to_metadata(old)
    url = f"duckdb:///{path}"
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    rows = [{k: v for k, v in a.items() if k != "colour"} for a in load_seed(DEFAULT_DATA_DIR).accelerators]
    with raw.begin() as conn:
        old.create_all(conn)
        conn.execute(old.tables["accelerator"].insert(), rows)
    raw.dispose()
    return url


def test_an_older_store_gets_the_colour_column_and_the_bundled_colours_at_init(tmp_path: Path) -> None:
    engine = store.engine_from_url(_store_without_colours(tmp_path / "old.duckdb"))
    store.init_store(engine, DEFAULT_DATA_DIR)
    assert store.accelerator_colours(engine) == bundled_colours()


def test_a_colour_set_since_is_kept_by_init(tmp_path: Path) -> None:
    engine = store.engine_from_url(_store_without_colours(tmp_path / "old.duckdb"))
    store.init_store(engine, DEFAULT_DATA_DIR)
    store.save_catalog_rows(engine, "accelerator", [{"id": "h200", "colour": "#123456"}])
    store.init_store(engine, DEFAULT_DATA_DIR)
    assert dict(store.accelerator_colours(engine))["h200"] == "#123456"
