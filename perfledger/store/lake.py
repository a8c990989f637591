"""DuckLake for step series at fleet scale: Parquet files under a data path, their catalog in the team's PostgreSQL,
read and written by any DuckDB client at once.

Offline by construction: the `ducklake` and `postgres_scanner` extensions come from the package index
(`duckdb-extension-ducklake`, `duckdb-extension-postgres`, the same version as `duckdb`) and are LOADed from the
files those packages ship; DuckDB never downloads one (autoinstall and autoload off). DuckDB takes an extension's
name from its file's name: the postgres package ships `postgres.duckdb_extension`, whose entry point is
`postgres_scanner`'s, so it is loaded through a link of that name in the cache folder (PERFLEDGER_CACHE_DIR).

    lake = LakeSpec.from_url("ducklake+postgresql://USER@HOST:5432/DB?data_path=/var/lib/perfledger/steps")
    with lake_connection(lake) as con:  # a DuckDB connection with the lake attached as `lake`
        con.execute("SELECT count(*) FROM lake.step").fetchone()
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from perfledger.errors import InvalidSetting, StoreError
from perfledger.settings import load_settings

SCHEME = "ducklake+postgresql"
ALIAS = "lake"
# extension name as DuckDB knows it -> the package that ships it and the name of the file in it
EXTENSIONS = {"postgres_scanner": ("duckdb_extension_postgres", "postgres"),
              "ducklake": ("duckdb_extension_ducklake", "ducklake")}


@dataclass(frozen=True, slots=True)
class LakeSpec:
    """Where a lake is: its catalog's PostgreSQL (libpq keywords) and the folder its Parquet files go to."""

    dsn: str
    data_path: str
    shown: str  # the URL with any password hidden, for sentences

    @classmethod
    def from_url(cls, url: str) -> LakeSpec:
        """ducklake+postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE?data_path=FOLDER"""
        parts = urlsplit(url)
        data_path = (parse_qs(parts.query).get("data_path") or [""])[0]
        if parts.scheme != SCHEME or not parts.hostname or not parts.path.strip("/") or not data_path:
            raise InvalidSetting(f"a steps URL reads {SCHEME}://USER@HOST:PORT/DATABASE?data_path=FOLDER, got "
                                 f"{_hidden(url)!r}")
        words = {"dbname": unquote(parts.path.strip("/")), "host": parts.hostname,
                 "port": str(parts.port or 5432), "user": unquote(parts.username or "")}
        if parts.password:
            words["password"] = unquote(parts.password)
        dsn = " ".join(f"{k}={_libpq_value(v)}" for k, v in words.items() if v)
        return cls(dsn=dsn, data_path=data_path.rstrip("/") + "/", shown=_hidden(url))


def _hidden(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def _libpq_value(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'" if any(c in value for c in " '\\") else value


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


@contextmanager
def lake_connection(lake: LakeSpec) -> Iterator[object]:
    """An in-memory DuckDB connection with both extensions loaded from their files and the lake attached as
    `lake`; a catalog that cannot be reached or a data path that cannot be written is a StoreError naming the lake."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        for name in EXTENSIONS:
            con.execute(f"LOAD '{_sql_literal(str(extension_file(name)))}'")
        # Rows always go to Parquet: DuckLake would keep small inserts in the catalog's own tables (inlining)
        con.execute(f"ATTACH 'ducklake:postgres:{_sql_literal(lake.dsn)}' AS {ALIAS} "
                    f"(DATA_PATH '{_sql_literal(lake.data_path)}', DATA_INLINING_ROW_LIMIT 0)")
    except duckdb.Error as exc:
        con.close()
        said = _PASSWORD.sub("password=***", str(exc).strip().splitlines()[0])  # the driver repeats the DSN
        raise StoreError(lake.shown, said) from None
    try:
        yield con
    finally:
        con.close()


_PASSWORD = re.compile(r"password=(?:'(?:[^'\\]|\\.)*'|[^\s\"]+)")


def _sql_literal(text: str) -> str:
    return text.replace("'", "''")
