"""Resolving a printed accelerator or model name to its canonical id; an unknown name raises `UnknownId`."""

from __future__ import annotations

from perfledger.catalog.accelerators import ACCELERATOR_ALIASES, ACCELERATOR_DEFAULTS, ACCELERATOR_IDS
from perfledger.catalog.models import MODEL_ALIASES, MODEL_IDS
from perfledger.catalog.names import key_table, keys, lookup, nearest
from perfledger.errors import UnknownId

_ACCELERATOR_TABLE = key_table(ACCELERATOR_IDS, ACCELERATOR_ALIASES)
_ACCELERATOR_DEFAULT_TABLE: dict[str, tuple[str, str]] = {
    key: target for alias, target in ACCELERATOR_DEFAULTS.items() for key in keys(alias)
}
_MODEL_TABLE = key_table(MODEL_IDS, MODEL_ALIASES)


def resolve_accelerator_noted(name: str) -> tuple[str, str | None]:
    """Canonical accelerator id for a name as printed, and a note when a default filled a gap.

    >>> resolve_accelerator_noted("NVIDIA A100-SXM4-80GB")
    ('a100-80gb', None)
    >>> resolve_accelerator_noted("A100")[0]
    'a100-80gb'
    """
    found = lookup(name, _ACCELERATOR_TABLE)
    if found is not None:
        return found, None
    for key in keys(name):
        if key in _ACCELERATOR_DEFAULT_TABLE:
            return _ACCELERATOR_DEFAULT_TABLE[key]
    raise UnknownId("accelerator", name, nearest(name, ACCELERATOR_IDS))


def resolve_accelerator(name: str) -> str:
    """Canonical accelerator id: "NVIDIA H100 80GB HBM3" -> "h100-sxm"; unknown names raise UnknownId."""
    return resolve_accelerator_noted(name)[0]


def resolve_model(name: str) -> str:
    """Canonical model id: "meta-llama/Llama-2-70b-hf" -> "llama2-70b"; unknown names raise UnknownId."""
    found = lookup(name, _MODEL_TABLE)
    if found is None:
        raise UnknownId("model", name, nearest(name, MODEL_IDS))
    return found
