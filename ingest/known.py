"""The catalog read once for many files: a folder's or a round's logs take their model and accelerator rows from it,
so preparing a log opens no connection to the store (each opened two, 11-14 ms apiece on DuckDB) and a worker
process needs no store at all."""

from __future__ import annotations

from dataclasses import dataclass

from ingest.summary import CatalogRows
from perfledger import store
from perfledger.catalog import Catalog
from perfledger.errors import PerfledgerError
from perfledger.records import RunConfig
from perfledger.seed import read_catalog_rows
from perfledger.settings import data_dir as settings_data_dir

BUNDLED_NOTE = ("the store holds no catalog (run `python -m perfledger init`): the model and accelerator rows came "
                "from the catalog bundled in data/")


@dataclass(frozen=True, slots=True)
class KnownRows:
    """Model and accelerator rows by id, as the store held them when read (or data/'s, `note` says so)."""

    catalog: Catalog
    note: str | None = None

    def rows_for(self, config: RunConfig) -> CatalogRows:
        """The rows of the run's model and accelerator (None where the catalog has no such id)."""
        model = self.catalog.models.get(config.model) if config.model else None
        accelerator = self.catalog.accelerators.get(config.accelerator) if config.accelerator else None
        asked = bool(config.model or config.accelerator)
        return CatalogRows(model=dict(model) if model is not None else None,
                           accelerator=dict(accelerator) if accelerator is not None else None,
                           note=self.note if asked else None)


def known_rows(engine: store.Engine) -> KnownRows:
    """The store's catalog, read through one connection; data/'s when the store holds none (never initialised) or
    cannot be read (the figures then say where their rows came from)."""
    try:
        catalog = store.catalog_record(engine)
    except PerfledgerError:
        return bundled_rows()
    return KnownRows(catalog) if catalog.models or catalog.accelerators else bundled_rows()


def bundled_rows() -> KnownRows:
    """data/'s catalog (PERFLEDGER_DATA_DIR), models and accelerators only."""
    models, accelerators = read_catalog_rows(settings_data_dir())
    return KnownRows(Catalog.from_rows(models, accelerators), BUNDLED_NOTE)
