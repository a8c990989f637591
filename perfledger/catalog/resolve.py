"""Resolving a printed accelerator or model name to its canonical id; an unknown name raises `UnknownId`.

Every function takes the `Catalog` to resolve with; without one it uses the bundled catalog (data/), which is
what parsers, which never touch the store, get. Code holding a store passes `perfledger.store.catalog_record`.
"""

from __future__ import annotations

from perfledger.catalog.names import keys, lookup, printed_size
from perfledger.catalog.record import Catalog, bundled_catalog
from perfledger.errors import UnknownId


def resolve_noted(kind: str, name: str, catalog: Catalog | None = None) -> tuple[str, str | None]:
    """Canonical id of a "model" or "accelerator" as printed, and a note when a default filled a gap."""
    found = _found(kind, name, catalog or bundled_catalog())
    if found is None:
        raise UnknownId(kind, name, nearest_ids(kind, name, catalog))
    return found


def _found(kind: str, name: str, catalog: Catalog) -> tuple[str, str | None] | None:
    """(id, note) of a printed name, or None; remembered by the catalog, whose rows never change: a round's 1,669
    files print a few dozen names, each looked up once."""
    memo = catalog.resolved
    if (kind, name) not in memo:
        names = catalog.names(kind)
        found = lookup(name, names.keys)
        memo[(kind, name)] = (found, None) if found is not None else next(
            (names.defaults[key] for key in keys(name) if key in names.defaults), None)
    return memo[(kind, name)]


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
    found = _found(kind, name, catalog or bundled_catalog())  # the nearest ids of an unknown name are not needed
    return found[0] if found is not None else None


def nearest_ids(kind: str, name: str, catalog: Catalog | None = None) -> tuple[str, ...]:
    """The (up to) three catalog ids of `kind` that `name` may mean, nearest first, by meaning before spelling
    (perfledger.catalog.meaning): an accelerator of the vendor its words name, a model of its family, generation and
    parameter count ("16B" is near the 16B models, not mpt-1b; "gemma4-26b" near no model the catalog has)."""
    from perfledger.catalog.meaning import nearest_accelerators, nearest_models

    known = catalog or bundled_catalog()
    return nearest_models(name, known) if kind == "model" else nearest_accelerators(name, known)


def model_sizes(catalog: Catalog) -> dict[str, float | None]:
    """Each model id's parameter count: the one its id prints ("mcore-gpt-16b"), else its `params` cell."""
    return {ident: printed_size(ident) or _number(row.get("params")) for ident, row in catalog.models.items()}


def _number(cell: object) -> float | None:
    try:
        return float(cell) if cell not in (None, "") else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
