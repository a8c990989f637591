"""Linking a result to the catalog without losing what was printed.

A result names its model and accelerator twice: `*_id` (a catalog id, or None) and `*_as_printed` (the text as
the source printed it). A name the catalog does not know is kept as printed with the id None: the row is
*unlinked*, never dropped, and links as soon as the catalog learns the name (`catalog link`, an alias row).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from perfledger.catalog.record import Catalog
from perfledger.catalog.resolve import nearest_ids, resolve_or_none
from perfledger.errors import InvalidInput
from perfledger.records import ResultRecord

KINDS: tuple[str, ...] = ("model", "accelerator")
# Printed names that say nothing is named: such a row is not unlinked, it has nothing to link.
ABSENT_NAMES = frozenset({"", "not stated", "unstated", "n/a", "none", "unknown"})


def is_absent(name: str | None) -> bool:
    """True for None and for texts such as "not stated" that name nothing."""
    return name is None or name.strip().lower() in ABSENT_NAMES


def linked_ids(kind: str, given_id: str | None, printed: str | None, catalog: Catalog) -> tuple[str | None, str | None]:
    """(catalog id or None, printed name) for one kind of one row.

    A given id the catalog holds is kept; otherwise the given text, then the printed name, is resolved. A text
    that does not resolve becomes the printed name (when none was printed), so it is never lost.
    """
    if given_id is not None and given_id in catalog.rows(kind):
        return given_id, printed
    for name in (given_id, printed):
        if not is_absent(name) and (found := resolve_or_none(kind, name, catalog)) is not None:
            return found, printed if printed is not None else given_id
    return None, printed if printed is not None else given_id


def link_record(record: ResultRecord, catalog: Catalog) -> ResultRecord:
    """The record with its model and accelerator ids resolved against `catalog`, printed names kept."""
    model_id, model_printed = linked_ids("model", record.model_id, record.model_as_printed, catalog)
    acc_id, acc_printed = linked_ids("accelerator", record.accelerator_id, record.accelerator_as_printed, catalog)
    return replace(record, model_id=model_id, model_as_printed=model_printed,
                   accelerator_id=acc_id, accelerator_as_printed=acc_printed)


@dataclass(frozen=True, slots=True)
class UnlinkedName:
    """A printed model or accelerator name no catalog row claims, the rows that print it, the nearest ids."""

    kind: str
    name: str
    rows: int
    nearest: tuple[str, ...]
    sources: tuple[str, ...] = ()  # the sources of those rows

    def warning(self) -> str:
        """One sentence: what is unlinked, how many rows, the nearest ids and the command that links it."""
        rows = f"{self.rows:,} row{'s' if self.rows != 1 else ''}"
        near = f"nearest: {', '.join(self.nearest)}" if self.nearest else "no catalog id is near"
        target = self.nearest[0] if self.nearest else "ID"
        source = self.sources[0] if len(self.sources) == 1 else None
        return (f"{self.kind} {self.name!r} ({rows}) is not in the catalog ({near}); stored unlinked: "
                f"{link_command(self.name, target, source)} links it")

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "rows": self.rows, "nearest": list(self.nearest),
                "sources": list(self.sources)}


def link_command(printed_name: str, catalog_id: str, source_id: str | None = None) -> str:
    """The command that links the stored rows printed `printed_name` (of `source_id`, when given) to the catalog
    row `catalog_id`."""
    quoted = shlex.quote(printed_name) if set(printed_name) & set('$`\\"!') else f'"{printed_name}"'
    scope = f" --source {shlex.quote(source_id)}" if source_id else ""
    return f"python -m perfledger catalog link {quoted} {catalog_id}{scope}"


def unlinked_in(records: Iterable[ResultRecord], catalog: Catalog) -> tuple[UnlinkedName, ...]:
    """One entry per distinct printed name that `records` (already linked) leave unlinked, with its row count
    and the three nearest `catalog` ids; most rows first, then by kind and name."""
    counts: Counter[tuple[str, str]] = Counter()
    sources: dict[tuple[str, str], set[str]] = {}
    for r in records:
        for kind, ident, printed in (("model", r.model_id, r.model_as_printed),
                                     ("accelerator", r.accelerator_id, r.accelerator_as_printed)):
            if ident is None and printed is not None and not is_absent(printed):
                counts[(kind, printed)] += 1
                sources.setdefault((kind, printed), set()).update({r.source_id} if r.source_id else ())
    found = [UnlinkedName(kind, name, n, nearest_ids(kind, name, catalog), tuple(sorted(sources[(kind, name)])))
             for (kind, name), n in counts.items()]
    return tuple(sorted(found, key=lambda u: (-u.rows, u.kind, u.name)))


def link_scope(printing: Mapping[str | None, int], source_id: str | None, all_sources: bool) -> tuple[str | None, ...]:
    """The sources a `catalog link` acts on, given the stored rows printing the name per source (None: rows of no
    source, such as a log's own figures). One source unless told otherwise: the one named, else the only source
    that prints the name; several without a choice are refused, so "32B" in one table never links another's.

    >>> link_scope({"maxtext_v5p": 4}, None, False)
    ('maxtext_v5p',)
    >>> link_scope({"a": 1, "b": 2}, None, True)
    ('a', 'b')
    """
    if all_sources:
        return tuple(sorted(printing, key=lambda s: (s is None, s or "")))
    if source_id is not None:
        return (source_id,)
    if len(printing) > 1:
        listed = ", ".join(f"{s or '(no source)'} ({n:,} rows)" for s, n in sorted(printing.items(),
                                                                                   key=lambda x: (x[0] is None, x[0] or "")))
        raise InvalidInput(f"the name is printed in {len(printing)} sources ({listed}); name one with --source ID, "
                           "or link them all with --all-sources")
    return tuple(printing)


@dataclass(frozen=True, slots=True)
class LinkWrite:
    """What a `catalog link` did: result rows linked, the sources they belong to, and whether the name became an
    alias (only when every source was linked: an alias links every future import too)."""

    rows: int
    sources: tuple[str | None, ...]
    aliased: bool

    def describe(self, kind: str, name: str, target: str) -> str:
        """One sentence: how many rows of how many sources were linked, and whether the name is now an alias."""
        sources = ", ".join(s or "(no source)" for s in self.sources)
        of = f"{len(self.sources)} source{'s' if len(self.sources) != 1 else ''}" + (f" ({sources})" if sources else "")
        text = f"linked {self.rows:,} stored result rows of {of} printed {name!r} to {kind} {target}"
        if self.aliased:
            return f"{text}; {name!r} is now an alias of {target}"
        return f"{text}; other sources keep their own reading ({name!r} is not made an alias: --all-sources does that)"
