"""DuckLake for step series at fleet scale: Parquet files under a data path, their catalog in the team's PostgreSQL,
read and written by any DuckDB client at once.

A store URL `ducklake+postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE?data_path=FOLDER` names both halves of a
store: the ledger tables (runs, results, catalog, campaigns) in that PostgreSQL database, as with a
`postgresql+psycopg://` URL, and the `step` rows as Parquet files under FOLDER, in a DuckLake whose catalog lives in
the same database (schema METADATA_SCHEMA). `perfledger.store.lake_steps` reads and writes the steps; this module
says where the lake is and opens it.

Offline by construction: the `ducklake` and `postgres_scanner` extensions come from the package index
(`duckdb-extension-ducklake`, `duckdb-extension-postgres`, the same version as `duckdb`) and are LOADed from the
files those packages ship; DuckDB never downloads one (autoinstall and autoload off). DuckDB takes an extension's
name from its file's name: the postgres package ships `postgres.duckdb_extension`, whose entry point is
`postgres_scanner`'s, so it is loaded through a link of that name in the cache folder (PERFLEDGER_CACHE_DIR).

Loading both extensions costs about a second and attaching a lake a few tenths, so a process keeps one in-memory
DuckDB with each lake it uses attached under an alias of its own (`step_table`); `lake_cursor` hands out cursors
of it, one per use (a cursor is a connection of its own to the same instance, safe beside another thread's). An
error detaches the lake: its next use attaches it afresh, so a catalog server that restarted is reached again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import duckdb
import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger.errors import DiskFull, InvalidSetting, StoreError, StoreNotInitialised, is_disk_full
from perfledger.settings import load_settings
from perfledger.spools import spool_dir

SCHEME = "ducklake+postgresql"
ALIAS = "lake"
METADATA_SCHEMA = "perfledger_lake"  # the catalog's tables, beside the ledger's in the same database
# extension name as DuckDB knows it -> the package that ships it and the name of the file in it
EXTENSIONS = {"postgres_scanner": ("duckdb_extension_postgres", "postgres"),
              "ducklake": ("duckdb_extension_ducklake", "ducklake")}
# The lake's DuckDB may hold this much before a sort (a long run's steps in order) spills to its spool folder.
LAKE_MEMORY = "256MB"


@dataclass(frozen=True, slots=True)
class LakeSpec:
    """Where a lake is: its catalog's PostgreSQL (libpq keywords), the folder its Parquet files go to, and the
    ledger's PostgreSQL as SQLAlchemy reads it."""

    dsn: str
    data_path: str
    shown: str  # the URL with any password hidden, for sentences
    url: str  # the URL as given (password included): what a worker process is handed
    ledger_url: str

    @classmethod
    def from_url(cls, url: str) -> LakeSpec:
        """ducklake+postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE?data_path=FOLDER"""
        parts = urlsplit(url)
        data_path = (parse_qs(parts.query).get("data_path") or [""])[0]
        if parts.scheme != SCHEME or not parts.hostname or not parts.path.strip("/") or not data_path:
            raise InvalidSetting(f"a DuckLake store URL reads {SCHEME}://USER@HOST:PORT/DATABASE?data_path=FOLDER, "
                                 f"got {_hidden(url)!r}")
        if "://" in data_path:
            raise InvalidSetting(f"the lake's data_path must be a folder on this machine (or a mounted volume every "
                                 f"server and ingest reaches), got {data_path!r}")
        database = unquote(parts.path.strip("/"))
        user, password = unquote(parts.username or ""), unquote(parts.password) if parts.password else None
        words = {"dbname": database, "host": parts.hostname, "port": str(parts.port or 5432), "user": user}
        if password is not None:
            words["password"] = password
        dsn = " ".join(f"{k}={_libpq_value(v)}" for k, v in words.items() if v)
        ledger = sa.URL.create("postgresql+psycopg", user or None, password, parts.hostname, parts.port, database)
        return cls(dsn=dsn, data_path=str(Path(data_path).resolve()).rstrip("/") + "/", shown=_hidden(url), url=url,
                   ledger_url=ledger.render_as_string(hide_password=False))


def is_lake_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() == SCHEME


def _hidden(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def _libpq_value(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'" if any(c in value for c in " '\\") else value


# ---------------------------------------------------------------- which engines keep their steps in a lake

_LAKES: weakref.WeakKeyDictionary[Engine, LakeSpec] = weakref.WeakKeyDictionary()


def keep_steps_in(engine: Engine, lake: LakeSpec) -> Engine:
    """Mark `engine` (the ledger's PostgreSQL) as keeping its steps in `lake`; the engine."""
    _LAKES[engine] = lake
    return engine


def lake_of(engine: Engine) -> LakeSpec | None:
    """The lake holding `engine`'s steps; None when its steps are in its own `step` table."""
    return _LAKES.get(engine)


def refuse_plain_opening(conn: sa.Connection, shown: str) -> None:
    """StoreError when the PostgreSQL database on `conn`, opened by a plain postgresql URL, is a DuckLake store's
    ledger: a write through it would put steps where no reader of the store looks."""
    found = conn.scalar(sa.text("SELECT count(*) FROM information_schema.schemata WHERE schema_name = :name"),
                        {"name": METADATA_SCHEMA})
    if found:
        raise StoreError(shown, f"this database keeps its steps in a DuckLake (its catalog is schema "
                                f"{METADATA_SCHEMA}); open it as {SCHEME}://USER@HOST:PORT/DATABASE?data_path=FOLDER")


# ---------------------------------------------------------------- opening a lake

def extension_file(name: str) -> Path:
    """The extension file DuckDB LOADs for `name`, from its package (linked under DuckDB's name where they differ)."""
    package, shipped = EXTENSIONS[name]
    spec = importlib.util.find_spec(package)
    found = sorted(Path(spec.origin).parent.glob(f"extensions/v*/{shipped}.duckdb_extension")) \
        if spec is not None and spec.origin else []
    if not found:
        raise StoreError(SCHEME, f"the {name} extension is not installed (pip install the pinned "
                                 f"{package.replace('_', '-')})")
    if shipped == name:
        return found[-1]
    link = load_settings().cache_dir / "duckdb-extensions" / f"{name}.duckdb_extension"
    if not link.exists() or link.resolve() != found[-1].resolve():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(found[-1])
    return link


def _duckdb() -> Any:
    """A new in-memory DuckDB with both extensions loaded from their files."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        for name in EXTENSIONS:
            con.execute(f"LOAD {sql_literal(str(extension_file(name)))}")
        con.execute(f"SET memory_limit = '{LAKE_MEMORY}'")
        con.execute(f"SET temp_directory = {sql_literal(str(spool_dir('lake')))}")
    except BaseException:
        con.close()
        raise
    return con


def _attach(con: Any, lake: LakeSpec, alias: str, *, read_only: bool) -> None:
    # Rows always go to Parquet: DuckLake would keep small inserts in the catalog's own tables (inlining)
    options = f"DATA_PATH {sql_literal(lake.data_path)}, DATA_INLINING_ROW_LIMIT 0, " \
              f"METADATA_SCHEMA '{METADATA_SCHEMA}'" + (", READ_ONLY" if read_only else "")
    con.execute(f"ATTACH {sql_literal('ducklake:postgres:' + lake.dsn)} AS {alias} ({options})")


@contextmanager
def lake_connection(lake: LakeSpec) -> Iterator[Any]:
    """A DuckDB connection of its own with the lake attached as `lake`, closed at the end of the block; a catalog
    that cannot be reached or a data path that cannot be written is a StoreError naming the lake."""
    with _said_as_store_errors(lake):
        con = _duckdb()
    try:
        with _said_as_store_errors(lake):
            _attach(con, lake, ALIAS, read_only=False)
        yield con
    finally:
        con.close()


# This process's DuckDB (loading the extensions costs about a second): every lake it uses is attached to it under
# an alias of its own, at its first use.
_BASE: dict[int, Any] = {}
_ATTACHED: set[str] = set()
_OPENING = threading.RLock()


def alias_of(lake: LakeSpec) -> str:
    """The name the lake is attached under in this process (read-only mode attaches it apart)."""
    mode = "ro" if load_settings().read_only else "rw"
    return f"lake_{hashlib.sha256(lake.url.encode()).hexdigest()[:12]}_{mode}"


def step_table(lake: LakeSpec) -> str:
    return f"{alias_of(lake)}.step"


def new_cursor(lake: LakeSpec) -> Any:
    """A cursor of this process's DuckDB with the lake attached (at its first use) as alias_of(lake): a connection
    of its own to that instance, to close when done. With PERFLEDGER_READ_ONLY=1 the lake is attached read-only."""
    alias = alias_of(lake)
    with _OPENING, lake_errors(lake):
        base = _BASE.get(os.getpid())
        if base is None:
            base = _BASE[os.getpid()] = _duckdb()
            _ATTACHED.clear()
        if alias not in _ATTACHED:
            _attach(base, lake, alias, read_only=load_settings().read_only)
            _ATTACHED.add(alias)
        return base.cursor()


@contextmanager
def _said_as_store_errors(lake: LakeSpec) -> Iterator[None]:
    try:
        yield
    except (duckdb.Error, OSError) as exc:
        raise said(lake, exc) from None


@contextmanager
def lake_errors(lake: LakeSpec) -> Iterator[None]:
    """DuckDB's and the OS's errors in the block raised as the StoreError (or DiskFull) that says them; the lake is
    detached, so that its next use attaches it afresh (a catalog server that restarted is reached again)."""
    try:
        yield
    except (duckdb.Error, OSError) as exc:
        _detach(alias_of(lake))
        raise said(lake, exc) from None


def _detach(alias: str) -> None:
    with _OPENING:
        base = _BASE.get(os.getpid())
        if alias not in _ATTACHED or base is None:
            return
        _ATTACHED.discard(alias)
        try:
            base.execute(f"DETACH DATABASE IF EXISTS {alias}")
        except duckdb.Error:
            _BASE.pop(os.getpid(), None)  # a new instance at the next use


@contextmanager
def lake_cursor(lake: LakeSpec) -> Iterator[Any]:
    """new_cursor(lake) for the block, its errors said as lake_errors says them."""
    cursor = new_cursor(lake)
    try:
        with lake_errors(lake):
            yield cursor
    finally:
        cursor.close()


def said(lake: LakeSpec, exc: BaseException) -> StoreError:
    """DuckDB's or the OS's error about the lake as one sentence naming it (never its password)."""
    if is_disk_full(exc):
        return DiskFull(lake.shown, lake.data_path.rstrip("/"))
    lines = str(exc).strip().splitlines()
    first = _PASSWORD.sub("password=***", lines[0] if lines else type(exc).__name__)  # the driver repeats the DSN
    if _MISSING_TABLE.search(first):
        return StoreNotInitialised(lake.shown, f"{first} (is the store initialised? run: python -m perfledger init)")
    return StoreError(lake.shown, first)


_MISSING_TABLE = re.compile(r"Table with name \w+ does not exist")


_PASSWORD = re.compile(r"password=(?:'(?:[^'\\]|\\.)*'|[^\s\"]+)")


def _sql_literal(text: str) -> str:
    return text.replace("'", "''")


def sql_literal(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + _sql_literal(text) + "'"
