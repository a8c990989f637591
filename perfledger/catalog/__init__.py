"""Canonical ids for accelerators and models, the aliases that resolve to them, and precision names.

    accelerators.py  ACCELERATOR_IDS, ACCELERATOR_ALIASES, ACCELERATOR_DEFAULTS (a gap filled, with a note)
    models.py        MODEL_IDS, MODEL_ALIASES
    names.py         a printed name -> lookup keys (case, punctuation, asides and vendor words ignored)
    resolve.py       resolve_accelerator(_noted), resolve_model; an unknown name raises UnknownId with the
                     three nearest ids
    precision.py     normalize_precision: "BF16" -> "bf16", "FP8-CS" -> "fp8", anything else -> "unstated"

Callers import from here: `from perfledger import catalog; catalog.resolve_accelerator("H100 SXM")`.
"""

from __future__ import annotations

from perfledger.catalog.accelerators import ACCELERATOR_ALIASES, ACCELERATOR_DEFAULTS, ACCELERATOR_IDS
from perfledger.catalog.models import MODEL_ALIASES, MODEL_IDS
from perfledger.catalog.names import normalize_name
from perfledger.catalog.precision import PRECISION_ALIASES, normalize_precision
from perfledger.catalog.resolve import resolve_accelerator, resolve_accelerator_noted, resolve_model

__all__ = [
    "ACCELERATOR_ALIASES",
    "ACCELERATOR_DEFAULTS",
    "ACCELERATOR_IDS",
    "MODEL_ALIASES",
    "MODEL_IDS",
    "PRECISION_ALIASES",
    "normalize_name",
    "normalize_precision",
    "resolve_accelerator",
    "resolve_accelerator_noted",
    "resolve_model",
]
