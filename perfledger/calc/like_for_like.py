"""Like for like: the one rule saying whether two result rows measure the same thing, shared by every page that
sets one figure beside another (Speedups, Head to head). Pure functions over result rows (mappings).

Two rows are like for like when they agree on every aspect below. A precision left unstated on either side is
never "the same": a vendor's BF16 figure and an unstated one may differ twice over (FP8), so it is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# (column, the aspect's name in a sentence), in the order sentences name them
ASPECTS = (("precision", "precision"), ("n_devices", "devices"), ("framework_version", "framework version"),
           ("workload", "workload"), ("seq_len", "sequence length"), ("global_batch", "global batch"))
UNSTATED = (None, "", "unstated")


@dataclass(frozen=True, slots=True)
class Difference:
    """One aspect in which two rows are not like for like, with each row's value."""

    aspect: str
    first: Any
    second: Any

    def describe(self) -> str:
        """The difference in words: "devices differ (32 vs 8)", "precision unstated on one side (bf16 vs unstated)"."""
        shown = f"({_text(self.first)} vs {_text(self.second)})"
        if self.aspect == "precision" and self.first in UNSTATED and self.second in UNSTATED:
            return "precision unstated on both sides"
        if self.aspect == "precision" and (self.first in UNSTATED or self.second in UNSTATED):
            return f"precision unstated on one side {shown}"
        return f"{self.aspect} differ{'' if self.aspect.endswith('s') else 's'} {shown}"


def _text(value: Any) -> str:
    return "unstated" if value in UNSTATED else f"{value:,}" if isinstance(value, int) else str(value)


def differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> tuple[Difference, ...]:
    """The aspects in which `first` and `second` are not like for like (ASPECTS order); () when they are.

    >>> a = {"precision": "bf16", "n_devices": 8, "framework_version": "NeMo 23.08", "workload": "pretrain"}
    >>> [d.aspect for d in differences(a, a | {"n_devices": 32, "framework_version": "NeMo 24.01"})]
    ['devices', 'framework version']
    >>> differences(a | {"precision": "unstated"}, a | {"precision": "unstated"})[0].describe()
    'precision unstated on both sides'
    """
    out = []
    for column, aspect in ASPECTS:
        a, b = first.get(column), second.get(column)
        unstated = column == "precision" and (a in UNSTATED or b in UNSTATED)
        if unstated or a != b:
            out.append(Difference(aspect, a, b))
    return tuple(out)


def verdict(diffs: Iterable[Difference]) -> str:
    """"like for like", or "not like for like: " and the aspects that differ, in the rule's order.

    >>> verdict([]), verdict([Difference("precision", None, None), Difference("framework version", "a", "b")])
    ('like for like', 'not like for like: precision, framework version')
    """
    names = named(diffs)
    return f"not like for like: {', '.join(names)}" if names else "like for like"


def named(diffs: Iterable[Difference]) -> list[str]:
    """The distinct aspects among `diffs`, in the rule's order."""
    seen = {d.aspect for d in diffs}
    return [aspect for _, aspect in ASPECTS if aspect in seen]


def details(diffs: Iterable[Difference]) -> str:
    """Every difference in words, "; "-joined ("" when like for like)."""
    return "; ".join(d.describe() for d in diffs)


def aspects_in(texts: Iterable[str | None]) -> list[str]:
    """The aspects that `details` texts name (a table's caveats cells), in the rule's order."""
    items = {part.strip() for text in texts if text for part in text.split(";")}
    return [aspect for _, aspect in ASPECTS if any(item.startswith(f"{aspect} ") for item in items)]
