"""Resolving a printed accelerator or model name to its canonical id; an unknown name raises `UnknownId`.

Every function takes the `Catalog` to resolve with; without one it uses the bundled catalog (data/), which is
what parsers, which never touch the store, get. Code holding a store passes `perfledger.store.catalog_record`.
"""

from __future__ import annotations

from perfledger.catalog.names import keys, lookup, nearest
from perfledger.catalog.record import Catalog, Names, bundled_catalog
from perfledger.errors import UnknownId


def resolve_noted(kind: str, name: str, catalog: Catalog | None = None) -> tuple[str, str | None]:
    """Canonical id of a "model" or "accelerator" as printed, and a note when a default filled a gap."""
    names = (catalog or bundled_catalog()).names(kind)
    found = lookup(name, names.keys)
    if found is not None:
        return found, None
    for key in keys(name):
        if key in names.defaults:
            return names.defaults[key]
    raise UnknownId(kind, name, nearest(name, names.ids))


def resolve_accelerator_noted(name: str, catalog: Catalog | None = None) -> tuple[str, str | None]:
    """Canonical accelerator id for a name as printed, and a note when a default filled a gap.

    >>> resolve_accelerator_noted("NVIDIA A100-SXM4-80GB")
    ('a100-80gb', None)
    >>> resolve_accelerator_noted("A100")[0]
    'a100-80gb'
    """
    return resolve_noted("accelerator", name, catalog)


def resolve_accelerator(name: str, catalog: Catalog | None = None) -> str:
    """Canonical accelerator id: "NVIDIA H100 80GB HBM3" -> "h100-sxm"; unknown names raise UnknownId."""
    return resolve_noted("accelerator", name, catalog)[0]


def resolve_model(name: str, catalog: Catalog | None = None) -> str:
    """Canonical model id: "meta-llama/Llama-2-70b-hf" -> "llama2-70b"; unknown names raise UnknownId."""
    return resolve_noted("model", name, catalog)[0]


def resolve_or_none(kind: str, name: str | None, catalog: Catalog | None = None) -> str | None:
    """The canonical id of `name`, or None when it is absent or unknown (the caller keeps the printed name)."""
    if name is None or not name.strip():
        return None
    try:
        return resolve_noted(kind, name, catalog)[0]
    except UnknownId:
        return None


def nearest_ids(kind: str, name: str, catalog: Catalog | None = None) -> tuple[str, ...]:
    """The three catalog ids of `kind` closest to `name`, closest first."""
    names: Names = (catalog or bundled_catalog()).names(kind)
    return nearest(name, names.ids)
