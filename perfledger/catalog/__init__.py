"""Canonical ids for accelerators and models, the names that resolve to them, and precision names.

The ids and names are data: rows of the `model` and `accelerator` tables (data/models.csv and
data/accelerators.csv, their `aliases` column; `catalog add` extends them). No Python constant lists them.

    record.py     Catalog: model and accelerator rows by id and their lookup keys; bundled_catalog() (data/)
    names.py      a printed name -> lookup keys (case, punctuation, asides and vendor words ignored); nearest
    resolve.py    resolve_accelerator(_noted), resolve_model against a Catalog (default: the bundled one); an
                  unknown name raises UnknownId with the three nearest ids
    link.py       link_record: a result's ids resolved, its printed names kept (an unknown name: unlinked)
    validate.py   checking rows offered to `catalog add`, one sentence per refusal
    precision.py  normalize_precision: "BF16" -> "bf16", "FP8-CS" -> "fp8", anything else -> "unstated"

Callers import from here: `from perfledger import catalog; catalog.resolve_accelerator("H100 SXM")`; code that
holds a store passes its catalog: `catalog.resolve_model(name, store.catalog_record(engine))`.
"""

from __future__ import annotations

from perfledger.catalog.link import KINDS, is_absent, link_record, linked_ids
from perfledger.catalog.names import nearest, normalize_name
from perfledger.catalog.precision import PRECISION_ALIASES, normalize_precision
from perfledger.catalog.record import Alias, Catalog, Names, bundled_catalog, format_aliases, parse_aliases
from perfledger.catalog.resolve import (
    NameMatch,
    accelerator_in_name,
    model_in_name,
    nearest_ids,
    resolve_accelerator,
    resolve_accelerator_noted,
    resolve_model,
    resolve_noted,
    resolve_or_none,
)

__all__ = [
    "KINDS",
    "PRECISION_ALIASES",
    "Alias",
    "Catalog",
    "NameMatch",
    "Names",
    "accelerator_in_name",
    "bundled_catalog",
    "format_aliases",
    "is_absent",
    "link_record",
    "linked_ids",
    "model_in_name",
    "nearest",
    "nearest_ids",
    "normalize_name",
    "normalize_precision",
    "parse_aliases",
    "resolve_accelerator",
    "resolve_accelerator_noted",
    "resolve_model",
    "resolve_noted",
    "resolve_or_none",
]
