"""The catalog as one typed record: model and accelerator rows (ids, shapes, peaks) and the names that resolve to them.

Built from rows of the `model` and `accelerator` tables: from the store (`perfledger.store.catalog`) or, with
no store at hand, from the bundled CSVs under data/ (`bundled_catalog`, read once per process). No id is
written in Python: a row's `aliases` cell lists the printed names of its id, " | "-separated. A name followed
by a bracketed note ("A100 [memory size not stated; ...]") leaves something unstated: it resolves to the row's
id only when nothing else matches, and the note travels with the id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from perfledger.catalog.names import key_table, keys

Row = Mapping[str, Any]
ALIAS_SEPARATOR = " | "
_NOTED = re.compile(r"^(?P<name>[^\[\]]*?)\s*\[(?P<note>[^\[\]]*)\]\s*$")


@dataclass(frozen=True, slots=True)
class Alias:
    """One printed name of a catalog id; `note` is set when the name leaves something unstated (a default)."""

    name: str
    note: str | None = None

    def text(self) -> str:
        return self.name if self.note is None else f"{self.name} [{self.note}]"


def parse_aliases(cell: str | None) -> tuple[Alias, ...]:
    """The aliases of one `aliases` cell.

    >>> parse_aliases("H100 SXM | H100 [form factor not stated]")
    (Alias(name='H100 SXM', note=None), Alias(name='H100', note='form factor not stated'))
    """
    out: list[Alias] = []
    for part in (cell or "").split("|"):
        text = part.strip()
        if not text:
            continue
        noted = _NOTED.match(text)
        out.append(Alias(noted["name"], noted["note"].strip()) if noted else Alias(text))
    return tuple(out)


def format_aliases(aliases: Iterable[Alias]) -> str | None:
    """The `aliases` cell for these aliases (None when there are none)."""
    text = ALIAS_SEPARATOR.join(a.text() for a in aliases)
    return text or None


@dataclass(frozen=True, slots=True)
class Names:
    """One kind's ids and the lookup keys that resolve to them (keys as perfledger.catalog.names makes them)."""

    kind: str  # "model" | "accelerator"
    ids: tuple[str, ...]
    keys: Mapping[str, str]  # lookup key -> id; an id's own keys win over any alias's
    defaults: Mapping[str, tuple[str, str]]  # lookup key of a noted alias -> (id, note)

    @classmethod
    def from_rows(cls, kind: str, rows: Sequence[Row]) -> Names:
        ids = tuple(str(r["id"]) for r in rows)
        plain: dict[str, str] = {}
        defaults: dict[str, tuple[str, str]] = {}
        for row in rows:
            for alias in parse_aliases(row.get("aliases")):
                if alias.note is None:
                    plain.setdefault(alias.name, str(row["id"]))
                else:
                    for key in keys(alias.name):
                        defaults.setdefault(key, (str(row["id"]), alias.note))
        return cls(kind, ids, key_table(ids, plain), defaults)


@dataclass(frozen=True, slots=True)
class Catalog:
    """Model and accelerator rows by id, and the names that resolve to them."""

    models: Mapping[str, Row]
    accelerators: Mapping[str, Row]
    model_names: Names
    accelerator_names: Names
    # (kind, printed name) -> (id, note) or None, as perfledger.catalog.resolve found it: the rows never change
    resolved: dict[tuple[str, str], tuple[str, str | None] | None] = field(default_factory=dict, compare=False,
                                                                          repr=False)

    @classmethod
    def from_rows(cls, models: Sequence[Row], accelerators: Sequence[Row]) -> Catalog:
        return cls(
            models={str(r["id"]): r for r in models},
            accelerators={str(r["id"]): r for r in accelerators},
            model_names=Names.from_rows("model", models),
            accelerator_names=Names.from_rows("accelerator", accelerators),
        )

    def names(self, kind: str) -> Names:
        """The names of "model" or "accelerator"."""
        return self.model_names if kind == "model" else self.accelerator_names

    def rows(self, kind: str) -> Mapping[str, Row]:
        return self.models if kind == "model" else self.accelerators


@lru_cache(maxsize=1)
def bundled_catalog() -> Catalog:
    """The catalog of the CSVs shipped under data/ (the project's own, not PERFLEDGER_DATA_DIR): what parsers
    and other code with no store resolve names with. Read once per process."""
    from perfledger.seed import read_catalog_rows  # seed reads CSVs and resolves with a Catalog: import late
    from perfledger.settings import DEFAULT_DATA_DIR

    models, accelerators = read_catalog_rows(DEFAULT_DATA_DIR)
    return Catalog.from_rows(models, accelerators)
