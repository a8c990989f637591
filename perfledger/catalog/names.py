"""How a printed name becomes lookup keys: case, spaces and punctuation ignored, asides and noise words dropped.

Names are matched in four tries: the name exactly as written (case and runs of spaces aside, so "GenSLM 25B"
is never "genslm-2.5b"), the whole name, the name without parenthesized asides ("NVIDIA H100 (Eos)"
-> "NVIDIA H100"), and the name without vendor, system and form-factor words ("NVIDIA DGX-H100", "NVIDIA H100
80GB HBM3").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

# Words that name a vendor, a system or a form factor rather than the accelerator itself.
_NOISE_WORDS = frozenset({
    "nvidia", "amd", "intel", "habana", "google", "cloud", "cerebras", "sambanova", "graphcore", "instinct",
    "tesla", "tensor", "core", "gpu", "gpus", "sxm", "sxm2", "sxm4", "sxm5", "oam", "hbm2", "hbm2e", "hbm3",
    "hbm3e", "the", "meta", "hf", "chat", "base",
})
_PAREN = re.compile(r"\([^)]*\)")
_WORD = re.compile(r"[a-z0-9]+")


def normalize_name(name: str) -> str:
    """Lower case, letters and digits only: "NVIDIA A100-SXM4-80GB" -> "nvidiaa100sxm480gb"."""
    return "".join(_WORD.findall(name.lower()))


def without_parens(name: str) -> str:
    """The name with its parenthesized asides blanked: "NVIDIA H100 (Eos)" -> "NVIDIA H100  "."""
    return _PAREN.sub(" ", name)


def _without_noise(name: str) -> str:
    words = _WORD.findall(without_parens(name.split("/")[-1]).lower())
    return "".join(w for w in words if w not in _NOISE_WORDS)


def exact_key(name: str) -> str:
    """The name as written, case and runs of spaces aside, marked so no normalized key can equal it."""
    return "=" + " ".join(name.casefold().split())


def keys(name: str) -> tuple[str, str, str, str]:
    """The lookup keys of a name, most specific first.

    >>> keys("NVIDIA H100 80GB HBM3 (Eos)")
    ('=nvidia h100 80gb hbm3 (eos)', 'nvidiah10080gbhbm3eos', 'nvidiah10080gbhbm3', 'h10080gb')
    """
    return (exact_key(name), normalize_name(name), normalize_name(without_parens(name)), _without_noise(name))


def key_table(ids: Iterable[str], aliases: Mapping[str, str]) -> dict[str, str]:
    """Every key of every id and alias -> its canonical id; an id's own keys win over an alias's."""
    table: dict[str, str] = {}
    for canonical in ids:
        for key in keys(canonical):
            table.setdefault(key, canonical)
    for alias, canonical in aliases.items():
        for key in keys(alias):
            table.setdefault(key, canonical)
    return table


def lookup(name: str, table: Mapping[str, str]) -> str | None:
    """The canonical id of the first key of `name` found in `table`, or None."""
    for key in keys(name):
        if key and key in table:
            return table[key]
    return None


def nearest(name: str, ids: Iterable[str]) -> tuple[str, ...]:
    """The three ids closest to `name` (by difflib's ratio over normalized names), closest first."""
    key = normalize_name(name)
    by_key = {normalize_name(i): i for i in ids}
    close = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.0)
    return tuple(by_key[k] for k in close)
