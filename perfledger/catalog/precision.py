"""Precision names: the one reader is perfledger.vocabulary (read_precision, normalize_precision); re-exported
here for the catalog's callers."""

from __future__ import annotations

from perfledger.vocabulary import PRECISION_ALIASES, normalize_precision, read_precision

__all__ = ["PRECISION_ALIASES", "normalize_precision", "read_precision"]
