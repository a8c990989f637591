"""How a printed name becomes lookup keys: case, spaces and punctuation ignored, asides and noise words dropped.

Names are matched in four tries: the name exactly as written (case and runs of spaces aside, so "GenSLM 25B"
is never "genslm-2.5b"), the whole name, the name without parenthesized asides ("NVIDIA H100 (Eos)"
-> "NVIDIA H100"), and the name without vendor, system and form-factor words ("NVIDIA DGX-H100", "NVIDIA H100
80GB HBM3").
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping

# Words that name a vendor, a system or a form factor rather than the accelerator itself.
_NOISE_WORDS = frozenset({
    "nvidia", "amd", "intel", "habana", "google", "cloud", "cerebras", "sambanova", "graphcore", "instinct",
    "tesla", "tensor", "core", "gpu", "gpus", "sxm", "sxm2", "sxm4", "sxm5", "oam", "hbm2", "hbm2e", "hbm3",
    "hbm3e", "the", "meta", "hf", "chat", "base",
})
# Words that say a name is a model without saying which: no help in telling two models apart.
_GENERIC_WORDS = frozenset({"model", "models", "dense", "moe", "llm"})
GENERIC_WORDS = _GENERIC_WORDS | _NOISE_WORDS | {"instruct", "it", "base", "pretrained"}
# A parameter count as printed: "16B", "1024B", "1.5B", "126M", "1T", "8x7B" (experts x size); not "A22B" (active).
_SIZE = re.compile(r"(?<![a-z0-9.])(?:(?P<experts>\d+)\s*x\s*)?(?P<n>\d+(?:\.\d+)?)\s*(?P<scale>[kmbt])(?![a-z])")
_SCALE = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_TYPO = 0.85  # a whole name this close in spelling to an id (difflib's ratio) is that id mistyped
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


def printed_size(name: str) -> float | None:
    """The largest parameter count printed in a name, or None.

    >>> printed_size("1024B model"), printed_size("Mixtral 8x7B"), printed_size("qwen3-235b-a22b")
    (1024000000000.0, 56000000000.0, 235000000000.0)
    >>> printed_size("H100 80GB") is None
    True
    """
    sizes = [float(m["n"]) * _SCALE[m["scale"]] * int(m["experts"] or 1) for m in _SIZE.finditer(name.lower())]
    return max(sizes, default=None)


def _stem(name: str) -> str:
    """The name without its parameter counts and generic words: what tells a family apart ("Qwen3 235B" -> "qwen3")."""
    words = _WORD.findall(_SIZE.sub(" ", without_parens(name).lower()))
    return "".join(w for w in words if w not in _NOISE_WORDS and w not in _GENERIC_WORDS)


def _size_term(size: float, candidate: float | None) -> float:
    """How far apart two parameter counts are: 0 alike, 1/3 a factor of 2, at most 2 (64x, or no size known)."""
    if candidate is None or candidate <= 0:
        return 2.0
    return min(abs(math.log2(candidate / size)), 6.0) / 3


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def nearest(name: str, ids: Iterable[str], sizes: Mapping[str, float | None] | None = None) -> tuple[str, ...]:
    """The three ids closest to `name`, closest first.

    Without `sizes`, or when the name prints no parameter count, nearness is spelling (difflib's ratio over
    normalized names). A name that prints one ("16B", "1024B model") is near ids of a like size (`sizes`: id ->
    parameter count) and of a like family: size distance plus spelling distance of the names without their sizes,
    ties going to the whole name's spelling. So "1024B model" is near the trillion-parameter models, not gpt3-126m;
    an id the whole name nearly spells (a typo: "inhouse-77b" for inhouse-7b) still comes first.
    """
    size = printed_size(name)
    if sizes is None or size is None or size <= 0:
        key = normalize_name(name)
        by_key = {normalize_name(i): i for i in ids}
        close = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.0)
        return tuple(by_key[k] for k in close)
    stem, key = _stem(name), normalize_name(name)

    def distance(ident: str) -> tuple[bool, float, float]:
        spelling = _ratio(key, normalize_name(ident))
        return spelling < _TYPO, _size_term(size, sizes.get(ident)) + 1 - _ratio(stem, _stem(ident)), -spelling

    return tuple(sorted(ids, key=distance)[:3])
