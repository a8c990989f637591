"""Precision names as frameworks and papers print them, and the one function that reads them."""

from __future__ import annotations

from perfledger.catalog.names import normalize_name, without_parens
from perfledger.vocabulary import Precision

PRECISION_ALIASES: dict[str, Precision] = {
    "fp32": Precision.FP32,
    "float32": Precision.FP32,
    "tf32": Precision.TF32,
    "fp16": Precision.FP16,
    "float16": Precision.FP16,
    "half": Precision.FP16,
    "halfprecision": Precision.FP16,
    "halfprecisionmixed": Precision.FP16,
    "amp": Precision.FP16,
    "bf16": Precision.BF16,
    "bfloat16": Precision.BF16,
    "nonebfloat16": Precision.BF16,
    "ampbf16": Precision.BF16,
    "fp8": Precision.FP8,
    "fp8cs": Precision.FP8,
    "fp8mx": Precision.FP8,
    "mxfp8": Precision.FP8,
    "fp8ds": Precision.FP8,
    "fp8pertensorcurrentscaling": Precision.FP8,
    "float8": Precision.FP8,
    "float8tensorwise": Precision.FP8,
    "float8rowwise": Precision.FP8,
    "float8linearsfsdpfloat8allgatherbf16": Precision.FP8,
    "nvfp4": Precision.FP4,
    "fp4": Precision.FP4,
    "mxfp4": Precision.FP4,
    "": Precision.UNSTATED,
    "unstated": Precision.UNSTATED,
    "notstated": Precision.UNSTATED,
    "none": Precision.UNSTATED,
    "unknown": Precision.UNSTATED,
}


def normalize_precision(text: str | None) -> str:
    """A Precision value for a precision as printed: "BF16" -> "bf16", "FP8-CS" -> "fp8", "" -> "unstated".

    Anything starting with "not stated" is unstated; an unrecognized text is also unstated (the caller keeps
    the printed text in a note).

    >>> normalize_precision("FP8-CS"), normalize_precision("not stated (bf16 likely)")
    ('fp8', 'unstated')
    """
    key = normalize_name(without_parens(text or ""))
    if key.startswith("notstated"):
        return Precision.UNSTATED.value
    full = normalize_name(text or "")
    for candidate in (full, key):
        if candidate in PRECISION_ALIASES:
            return PRECISION_ALIASES[candidate].value
    return Precision.UNSTATED.value
