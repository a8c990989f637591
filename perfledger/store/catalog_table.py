"""The catalog tables in the store: read as a `Catalog`, extended row by row, and results linked to it.

A result row is *unlinked* for a kind (model, accelerator) when its id is empty or names no catalog row while a
name is printed. Linking never loses the printed name; it sets the id of every row printed that way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine

from perfledger import schema
from perfledger.catalog.link import KINDS, LinkWrite, is_absent, link_scope
from perfledger.catalog.names import normalize_name
from perfledger.catalog.record import Alias, Catalog, format_aliases, parse_aliases
from perfledger.catalog.resolve import nearest_ids, resolve_noted, resolve_or_none
from perfledger.errors import InvalidInput, UnknownId
from perfledger.store.engine import connection

_TABLES = {"model": schema.model, "accelerator": schema.accelerator}


@dataclass(frozen=True, slots=True)
class CatalogWrite:
    """What `save_catalog_rows` did: rows added and updated, and stored results that linked as a result."""

    added: int
    updated: int
    relinked: int


def catalog_from(conn: Connection) -> Catalog:
    """The store's catalog, read through an open connection (no Arrow: plain rows). The same rows read again give
    the same Catalog, built once: building its name tables took 40-90 ms, and every write of results reads it."""
    rows = [[dict(r) for r in conn.execute(sa.select(t).order_by(t.c.id)).mappings()] for t in _TABLES.values()]
    key = repr(rows)
    if key not in _BUILT:
        if len(_BUILT) >= _BUILT_KEPT:
            _BUILT.pop(next(iter(_BUILT)))
        _BUILT[key] = Catalog.from_rows(rows[0], rows[1])
    return _BUILT[key]


_BUILT: dict[str, Catalog] = {}  # the rows as read (their repr) -> the Catalog built from them
_BUILT_KEPT = 4


def catalog_record(engine: Engine) -> Catalog:
    """The store's catalog: every model and accelerator row, and the names that resolve to them."""
    with connection(engine, write=False) as conn:
        return catalog_from(conn)


def save_catalog_rows(engine: Engine, kind: str, rows: Sequence[Mapping[str, Any]]) -> CatalogWrite:
    """Add or update whole `kind` rows (same id: update) and link stored results the new names resolve, in one
    transaction."""
    table = _TABLES[kind]
    columns = {c.name for c in table.columns}
    added = updated = 0
    with connection(engine, write=True) as conn:
        stored = set(conn.scalars(sa.select(table.c.id)))
        for row in rows:
            values = {k: v for k, v in row.items() if k in columns}
            if row["id"] in stored:
                conn.execute(table.update().where(table.c.id == row["id"]).values(values))
                updated += 1
            else:
                conn.execute(table.insert().values(values))
                added += 1
        relinked = relink(conn, catalog_from(conn))
    return CatalogWrite(added, updated, relinked)


def add_alias_columns(conn: Connection) -> None:
    """Give a store made before the catalog had an `aliases` column that column (empty; `init` fills it)."""
    inspector = sa.inspect(conn)
    for table in _TABLES.values():
        if inspector.has_table(table.name) and "aliases" not in {c["name"] for c in inspector.get_columns(table.name)}:
            conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN aliases TEXT"))


def fill_aliases(conn: Connection, kind: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """Stored `kind` rows with no aliases take those of `rows` (data/), then stored results the names resolve
    are linked; aliases set since (catalog add, link) are kept. The number of catalog rows filled."""
    table = _TABLES[kind]
    empty = set(conn.scalars(sa.select(table.c.id).where(table.c.aliases.is_(None))))
    filled = [r for r in rows if r["id"] in empty and r.get("aliases")]
    for row in filled:
        conn.execute(table.update().where(table.c.id == row["id"]).values(aliases=row["aliases"]))
    if filled:
        relink(conn, catalog_from(conn))
    return len(filled)


def fill_colours(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """Stored accelerators with no colour take that of `rows` (data/): a store made before the catalog had colours
    gets them at its next `init`; a colour set since (catalog add) is kept. The number of rows filled."""
    table = schema.accelerator
    empty = set(conn.scalars(sa.select(table.c.id).where(table.c.colour.is_(None))))
    filled = [r for r in rows if r["id"] in empty and r.get("colour")]
    for row in filled:
        conn.execute(table.update().where(table.c.id == row["id"]).values(colour=row["colour"]))
    return len(filled)


def accelerator_colours(engine: Engine) -> tuple[tuple[str, str], ...]:
    """(accelerator id, #rrggbb) of each stored accelerator that has a colour, by id."""
    table = schema.accelerator
    with connection(engine, write=False) as conn:
        return tuple((str(i), str(c)) for i, c in conn.execute(
            sa.select(table.c.id, table.c.colour).where(table.c.colour.is_not(None)).order_by(table.c.id)))


def _printed(kind: str) -> tuple[sa.ColumnElement[Any], sa.ColumnElement[Any], sa.ColumnElement[Any]]:
    """(id column, printed column, the name a row goes by: printed, else its id) of `kind` on the result table."""
    r = schema.result
    ident, printed = r.c[f"{kind}_id"], r.c[f"{kind}_as_printed"]
    return ident, printed, sa.func.coalesce(printed, ident)


def _unlinked_counts(conn: Connection, kind: str) -> list[tuple[str, int]]:
    ident, _printed_col, name = _printed(kind)
    known = sa.select(_TABLES[kind].c.id)
    stmt = (sa.select(name.label("name"), sa.func.count().label("n"))
            .where(name.is_not(None), sa.or_(ident.is_(None), ident.not_in(known)))
            .group_by(name).order_by(name))
    return [(str(n), int(c)) for n, c in conn.execute(stmt) if not is_absent(n)]


def _set_id(conn: Connection, kind: str, names: Iterable[str], target: str, *, only_unlinked: bool,
            sources: Sequence[str | None] | None = None) -> int:
    """Set the `kind` id of the results printed with one of `names` (of `sources` only, when given)."""
    ident, printed, name = _printed(kind)
    where: list[sa.ColumnElement[bool]] = [name.in_(sorted(set(names)))]
    if only_unlinked:
        where.append(sa.or_(ident.is_(None), ident.not_in(sa.select(_TABLES[kind].c.id))))
    if sources is not None:
        where.append(_of_sources(sources))
    stmt = (schema.result.update().where(*where)
            .values({ident.name: target, printed.name: sa.func.coalesce(printed, ident)}))
    return int(conn.execute(stmt).rowcount or 0)


def _of_sources(sources: Sequence[str | None]) -> sa.ColumnElement[bool]:
    """Results of these sources (None: results of no source)."""
    column = schema.result.c.source_id
    named = [s for s in sources if s is not None]
    clauses = [column.in_(named)] if named else []
    if None in sources:
        clauses.append(column.is_(None))
    return sa.or_(sa.false(), *clauses)


def relink(conn: Connection, catalog: Catalog) -> int:
    """Link every unlinked result whose printed name `catalog` now resolves; the number of rows linked."""
    total = 0
    for kind in KINDS:
        for name, _n in _unlinked_counts(conn, kind):
            if (found := resolve_or_none(kind, name, catalog)) is not None:
                total += _set_id(conn, kind, (name,), found, only_unlinked=True)
    return total


def link_name(engine: Engine, kind: str, printed_name: str, target_id: str, *, source_id: str | None = None,
              all_sources: bool = False) -> LinkWrite:
    """Link the stored results printed `printed_name` (same letters and digits, any case or punctuation) to
    `target_id`: those of one source (`source_id`, else the only source printing it; `link_scope`), or of every
    source with `all_sources`, which also makes the name an alias so that future imports link too."""
    if kind not in _TABLES:
        raise InvalidInput(f"kind must be model or accelerator, got {kind!r}")
    with connection(engine, write=True) as conn:
        catalog = catalog_from(conn)
        if target_id not in catalog.rows(kind):
            raise UnknownId(kind, target_id, nearest_ids(kind, target_id, catalog))
        if source_id is not None and conn.scalar(sa.select(schema.source.c.id).where(
                schema.source.c.id == source_id)) is None:
            raise InvalidInput(f"no source {source_id!r} in the store")
        printing = _printing(conn, kind, printed_name)
        scope = link_scope({s: n for s, (n, _) in printing.items()}, source_id, all_sources)
        if all_sources:
            _add_alias(conn, kind, catalog, printed_name, target_id)
        names = {name for s in scope for name in printing.get(s, (0, ()))[1]}
        rows = _set_id(conn, kind, names, target_id, only_unlinked=False, sources=scope) if names else 0
    return LinkWrite(rows, scope, aliased=all_sources)


def _printing(conn: Connection, kind: str, printed_name: str) -> dict[str | None, tuple[int, tuple[str, ...]]]:
    """Per source: how many stored results print `printed_name` (letters and digits alike), and the spellings."""
    name = _printed(kind)[2]
    key = normalize_name(printed_name)
    stmt = (sa.select(schema.result.c.source_id, name, sa.func.count()).where(name.is_not(None))
            .group_by(schema.result.c.source_id, name))
    found: dict[str | None, tuple[int, tuple[str, ...]]] = {}
    for source_id, spelled, n in conn.execute(stmt):
        if normalize_name(spelled) == key:
            count, spellings = found.get(source_id, (0, ()))
            found[source_id] = (count + int(n), (*spellings, spelled))
    return found


def _add_alias(conn: Connection, kind: str, catalog: Catalog, printed_name: str, target_id: str) -> None:
    """Append `printed_name` to the aliases of `target_id`, unless it names that id already; refuse a name that
    is another id or another id's alias (a default with a note may be overridden)."""
    try:
        current, note = resolve_noted(kind, printed_name, catalog)
    except UnknownId:
        current, note = None, None
    if current == target_id and note is None:
        return
    if current is not None and note is None:
        raise InvalidInput(f"{printed_name!r} already names {kind} {current}; it cannot also name {target_id}")
    table = _TABLES[kind]
    aliases = (*parse_aliases(catalog.rows(kind)[target_id].get("aliases")), Alias(printed_name.strip()))
    conn.execute(table.update().where(table.c.id == target_id).values(aliases=format_aliases(aliases)))


def unlinked_names(engine: Engine) -> pl.DataFrame:
    """Every printed model or accelerator name no catalog row claims, with its stored result rows and the three
    nearest catalog ids: columns kind, printed_name, rows, nearest (", "-separated), most rows first."""
    with connection(engine, write=False) as conn:
        catalog = catalog_from(conn)
        found = [(kind, name, n, ", ".join(nearest_ids(kind, name, catalog)))
                 for kind in KINDS for name, n in _unlinked_counts(conn, kind)]
    schema_ = {"kind": pl.String, "printed_name": pl.String, "rows": pl.Int64, "nearest": pl.String}
    frame = pl.DataFrame(found, schema=schema_, orient="row")
    return frame.sort(["rows", "kind", "printed_name"], descending=[True, False, False])
