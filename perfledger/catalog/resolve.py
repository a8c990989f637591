"""Resolving a printed accelerator or model name to its canonical id; an unknown name raises `UnknownId`.

Every function takes the `Catalog` to resolve with; without one it uses the bundled catalog (data/), which is
what parsers, which never touch the store, get. Code holding a store passes `perfledger.store.catalog_record`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perfledger.catalog.meaning import nearest_accelerators, nearest_models
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


@dataclass(frozen=True, slots=True)
class NameMatch:
    """A catalog id found in a printed name, the part of the name that names it, and how sure the match is."""

    id: str
    part: str  # the words of the printed name that name the model
    confidence: str  # WHOLE_NAME, LEADING_WORDS or INSTRUCT_VARIANT


WHOLE_NAME = "the name is a catalog name or alias"
LEADING_WORDS = "the leading words of a run or class name are a catalog name"
INSTRUCT_VARIANT = ("the leading words of the name are a catalog name and the rest says an instruction-tuned "
                    "(-Instruct) variant: the same architecture, the base model's shape")
# A class or run name's words that say nothing of which model: "Llama3ModelProvider8B", "llama3-8b-pretrain".
_FILLER = frozenset({"model", "models", "provider", "config", "configuration", "for", "causal", "lm", "pretrain",
                     "pretraining", "finetune", "sft", "recipe", "hf"})
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z0-9])|(?<=[0-9])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[\s_/.:-]+")


def name_words(name: str) -> list[str]:
    """A run or class name's words, filler words left out: "Llama3ModelProvider8B" -> ["Llama", "3", "8B"]."""
    tail = name.rsplit(".", 1)[-1] if "/" not in name and name.count(".") > 1 else name  # a class path's class
    return [w for w in _SPLIT.split(_CAMEL.sub(" ", tail)) if w and w.lower() not in _FILLER]


def model_in_name(name: str, catalog: Catalog | None = None) -> NameMatch | None:
    """The catalog model a printed name names: the whole name ("facebook/opt-350m"), else the longest run of its
    leading words that prints a size and is a catalog name ("llama3_70b_64gpus_tp2" -> llama3-70b,
    "megatron.bridge...Llama3ModelProvider8B" -> llama3-8b). None when no part of it is one.

    >>> model_in_name("llama3_70b_64gpus_tp2_pp4_gbs128").id, model_in_name("Llama3ModelProvider8B").id
    ('llama3-70b', 'llama3-8b')
    """
    whole = resolve_or_none("model", name, catalog)
    if whole is not None:
        return NameMatch(whole, name, WHOLE_NAME)
    for tail in _path_tails(name):  # "/data/models/Meta-Llama-3-8B-Instruct": its directories name no model
        words = name_words(tail)
        for end in range(len(words), 0, -1):
            part = " ".join(words[:end])
            if printed_size(part) is not None and (found := resolve_or_none("model", part, catalog)) is not None:
                variant = any(w.lower() == "instruct" for w in words[end:])
                return NameMatch(found, part, INSTRUCT_VARIANT if variant else LEADING_WORDS)
    return None


def _path_tails(name: str) -> list[str]:
    """The name, then what follows each `/` in it: "a/b/Qwen2.5-7B" -> the whole, "b/Qwen2.5-7B", "Qwen2.5-7B"."""
    parts = [p for p in name.strip().split("/") if p]
    return list(dict.fromkeys(["/".join(parts[i:]) for i in range(len(parts))] or [name]))


IN_HOST_NAME = "the host, node or cluster name holds one catalog accelerator's name among its words"
_HOST_SPLIT = re.compile(r"[\s_.:/-]+")


def accelerator_in_name(name: str, catalog: Catalog | None = None) -> NameMatch | None:
    """The catalog accelerator a host, node or cluster name names among its words ("a100-80sxm-h9-01" ->
    a100-80gb), the longest run of words that resolves winning at each place; None when no word does, or when its
    words name two accelerators (never guessed). Only a word of letters and digits, three characters or more,
    opens a run: "node" or "t4" alone are too common in host names to say anything.

    >>> accelerator_in_name("a100-80sxm-h9-01").id
    'a100-80gb'
    """
    words = [w for w in _HOST_SPLIT.split(name.lower()) if w]
    found: dict[str, str] = {}
    for start, word in enumerate(words):
        if len(word) < 3 or not re.search(r"[a-z]", word) or not re.search(r"\d", word):
            continue
        for end in range(min(len(words), start + 3), start, -1):
            part = " ".join(words[start:end])
            if (ident := resolve_or_none("accelerator", part, catalog)) is not None:
                found.setdefault(ident, part)
                break
    if len(found) != 1:
        return None
    ident, part = next(iter(found.items()))
    return NameMatch(ident, part, IN_HOST_NAME)
