"""The store: an engine from a URL, one transaction per write, queries returning Polars frames.

Split along its seams: `engine` (engines, connections, the file lock, driver errors), `write` (save_run,
add_results, delete_run), `bulk` (big appends: DuckDB from Parquet, PostgreSQL by COPY), `read` (queries),
`copy` (a whole ledger between stores), `init` (tables, data/), `lake` and `lake_steps` (a DuckLake holding the
steps of a PostgreSQL store) and `catalog_table` (the catalog as a `Catalog`,
`catalog add` rows, linking printed names). Callers use the names re-exported here.
"""

from __future__ import annotations

from sqlalchemy import Engine

from perfledger import schema
from perfledger.records import InitReport, RunRow, SaveResult
from perfledger.store.campaigns import (
    campaign,
    campaign_run_ids,
    campaigns,
    outcome_counts,
    outcomes,
    save_campaign,
    save_campaigns,
)
from perfledger.store.catalog_table import (
    CatalogWrite,
    accelerator_colours,
    catalog_record,
    link_name,
    save_catalog_rows,
    unlinked_names,
)
from perfledger.store.copy import copy_store
from perfledger.store.engine import FAULT_TYPES, engine_from_url, is_duckdb, mask_url, reading, store_fault, url_of
from perfledger.store.init import create_schema, drop_schema, has_schema, init_store, rebuild_store
from perfledger.store.read import (
    MEASURED_KIND,
    STEP_COLUMNS,
    accelerators,
    catalog,
    catalog_rows,
    counts,
    find_run,
    finite_or_none,
    has_data,
    models,
    query,
    result_counts,
    results,
    run,
    runs_of_format,
    sources,
    step_times,
    steps,
    write_stamp,
)
from perfledger.store.resolve import apply_answer, to_resolve
from perfledger.store.run_list import RUN_LIST_FIELDS, runs
from perfledger.store.write import add_results, claims_refusals, delete_run, plan_run, result_row_key, save_run

__all__ = [
    "FAULT_TYPES",
    "MEASURED_KIND",
    "RUN_LIST_FIELDS",
    "STEP_COLUMNS",
    "CatalogWrite",
    "Engine",
    "InitReport",
    "RunRow",
    "SaveResult",
    "accelerator_colours",
    "accelerators",
    "add_results",
    "apply_answer",
    "campaign",
    "campaign_run_ids",
    "campaigns",
    "catalog",
    "catalog_record",
    "catalog_rows",
    "claims_refusals",
    "copy_store",
    "counts",
    "create_schema",
    "delete_run",
    "drop_schema",
    "engine_from_url",
    "find_run",
    "finite_or_none",
    "has_data",
    "has_schema",
    "init_store",
    "is_duckdb",
    "link_name",
    "mask_url",
    "models",
    "outcome_counts",
    "outcomes",
    "plan_run",
    "query",
    "reading",
    "rebuild_store",
    "result_counts",
    "result_row_key",
    "results",
    "run",
    "runs",
    "runs_of_format",
    "save_campaign",
    "save_campaigns",
    "save_catalog_rows",
    "save_run",
    "schema",
    "sources",
    "step_times",
    "steps",
    "store_fault",
    "to_resolve",
    "unlinked_names",
    "url_of",
    "write_stamp",
]
