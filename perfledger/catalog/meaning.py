"""Which catalog ids an unknown printed name may mean: by what it says (vendor, family, generation, parameter
count) before how it is spelled.

- An accelerator name that prints a word only one vendor's catalog rows use ("TPU", "Ironwood", "IPU", "H100") is
  near that vendor's parts only, those sharing most of its words first: "Ironwood TPU" is tpu-v7, never a
  Graphcore IPU. A name with no such word is near any part by spelling.
- A model name that prints a family the catalog knows ("gemma4-26b": gemma) is near that family only; one that
  prints a generation (4) only its members of that generation; one that prints a parameter count (26B) only models
  within 5% of it. A name that prints a family the catalog lacks ("wan2.1-14b") is near nothing. Nothing left
  means no suggestion: a 26B model is never offered a 2B one, nor Gemma 4 a Gemma 2, nor Wan a Qwen.
Within what is left, the nearest size and then the closest spelling come first.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import defaultdict
from collections.abc import Mapping

from perfledger.catalog.names import GENERIC_WORDS, normalize_name, printed_size, without_parens
from perfledger.catalog.record import Catalog, parse_aliases

TYPO = 0.9  # a whole name this close in spelling to an id of its family and generation is that id mistyped
SAME_SIZE = 0.07  # |log2(size / other)|: within about 5% is the same size ("70B" is 68.98B, "30B" is not 32B)
_SIZE = re.compile(r"(?<![a-z0-9.])(?:\d+\s*x\s*)?\d+(?:\.\d+)?\s*[kmbt](?![a-z])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _words(text: str) -> set[str]:
    """The words of a name that say something: letters and digits, at least two, with a letter."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 1 and re.search(r"[a-z]", w)}


def _spelling(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalize_name(a), normalize_name(b)).ratio()


# ---------------------------------------------------------------------------------------------------- accelerators
def accelerator_words(catalog: Catalog) -> dict[str, set[str]]:
    """Each accelerator id's words: of its id, name and aliases."""
    out: dict[str, set[str]] = {}
    for ident, row in catalog.accelerators.items():
        texts = [ident, str(row.get("name") or ""), *(a.name for a in parse_aliases(row.get("aliases")))]
        out[ident] = set().union(*(_words(t) for t in texts))
    return out


def vendor_markers(catalog: Catalog, words: Mapping[str, set[str]]) -> dict[str, str]:
    """Words only one vendor's rows use -> that vendor ("tpu" -> google)."""
    vendors: dict[str, set[str]] = defaultdict(set)
    for ident, found in words.items():
        vendor = str(catalog.accelerators[ident].get("vendor") or "").split("/")[0].strip().lower()
        for word in found:
            vendors[word].add(vendor)
    return {word: next(iter(v)) for word, v in vendors.items() if len(v) == 1 and "" not in v}


def nearest_accelerators(name: str, catalog: Catalog, n: int = 3) -> tuple[str, ...]:
    """The accelerator ids `name` may mean, nearest first (see the module's docstring).

    >>> from perfledger.catalog.record import bundled_catalog
    >>> nearest_accelerators("Ironwood TPU", bundled_catalog())[0]
    'tpu-v7'
    """
    words = accelerator_words(catalog)
    markers = vendor_markers(catalog, words)
    printed = _words(name)
    vendors = {markers[w] for w in printed if w in markers}
    candidates = [i for i in words if not vendors or _vendor(catalog, i) in vendors]
    ranked = sorted(candidates, key=lambda i: (-len(printed & words[i]), -_spelling(name, i)))
    return tuple(ranked[:n])


def _vendor(catalog: Catalog, ident: str) -> str:
    return str(catalog.accelerators[ident].get("vendor") or "").split("/")[0].strip().lower()


# ---------------------------------------------------------------------------------------------------------- models
def family_key(family: str) -> str:
    """A family's letters before its version: "llama3.2" -> "llama", "gpt-oss" -> "gptoss", "mcore-gpt" -> "mcoregpt"."""
    head = re.split(r"\d", family.lower(), maxsplit=1)[0]
    return re.sub(r"[^a-z]", "", head)


def generation(text: str) -> int | None:
    """The major version a name prints after its sizes are taken out: "gemma4-26b" -> 4, "Qwen3-30B3A" -> 3,
    "llama3.1-405b" -> 3, "gpt-oss-120b" -> None."""
    found = _NUMBER.search(_SIZE.sub(" ", without_parens(text).lower()))
    return int(float(found.group())) if found else None


def _model_facts(catalog: Catalog) -> dict[str, tuple[str, int | None, float | None]]:
    """Per model id: its family key, its generation (of its family, else of its id; 1 for an unnumbered member of
    a family with numbered ones: Gemma before Gemma 2) and its parameter count."""
    out = {}
    for ident, row in catalog.models.items():
        family = str(row.get("family") or ident)
        size = printed_size(ident) or _number(row.get("params"))
        out[ident] = (family_key(family), generation(family) or generation(ident), size)
    numbered = {fam for fam, gen, _ in out.values() if gen is not None}
    return {i: (fam, 1 if gen is None and fam in numbered else gen, size) for i, (fam, gen, size) in out.items()}


def nearest_models(name: str, catalog: Catalog, n: int = 3) -> tuple[str, ...]:
    """The model ids `name` may mean, nearest first; none when nothing of its family, generation and size is known.

    >>> from perfledger.catalog.record import bundled_catalog
    >>> nearest_models("gemma4-26b", bundled_catalog()), nearest_models("Qwen3-30B3A", bundled_catalog())[0]
    ((), 'qwen3-30b-a3b')
    """
    facts = _model_facts(catalog)
    words = re.findall(r"[a-z]+", _SIZE.sub(" ", without_parens(name).lower()))
    letters = "".join(w for w in words if w not in GENERIC_WORDS)
    families = [f for f, _, _ in facts.values() if f and letters.startswith(f)]
    family = max(families, key=len) if families else None
    if letters and family is None:  # a family the catalog lacks: no model of another family is what it means
        return ()
    gen, size = generation(name), printed_size(name)
    candidates = []
    for ident, (fam, their_gen, their_size) in facts.items():
        if family is not None and fam != family:
            continue
        if family is not None and gen is not None and their_gen is not None and gen != their_gen:
            continue
        spelling = _spelling(name, ident)
        distance = -1.0 if spelling >= TYPO else _size_distance(size, their_size)  # an id mistyped: "inhouse-77b"
        if distance is None:
            continue
        candidates.append((distance, -spelling, ident))
    return tuple(ident for *_, ident in sorted(candidates)[:n])


def _size_distance(size: float | None, other: float | None) -> float | None:
    """How far apart two parameter counts are (0 when the name prints none); None when not the same size."""
    if size is None or size <= 0:
        return 0.0
    if other is None or other <= 0:
        return None
    distance = abs(math.log2(other / size))
    return round(distance, 2) if distance <= SAME_SIZE else None


def _number(cell: object) -> float | None:
    try:
        return float(cell) if cell not in (None, "") else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
