"""Every setting perfledger reads from the environment, with its default and help; read in one place.

A value that does not fit its setting's type is an InvalidSetting naming the variable and what arrived.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from perfledger.errors import InvalidSetting

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = PROJECT_ROOT / "data"
DEFAULT_DB_URL = f"duckdb:///{DEFAULT_DATA_DIR / 'perfledger.duckdb'}"
DEFAULT_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfledger"


class Setting(NamedTuple):
    name: str
    default: str | int | bool | None
    help: str

    @property
    def env(self) -> str:
        return f"PERFLEDGER_{self.name.upper()}"


SETTINGS = (
    Setting("db_url", DEFAULT_DB_URL, "URL of the store: a DuckDB file by default, postgresql+psycopg://..., or "
            "ducklake+postgresql://USER@HOST:PORT/DB?data_path=FOLDER (the ledger in that PostgreSQL, the steps as "
            "Parquet files under FOLDER in a DuckLake cataloged in the same database)"),
    Setting("read_only", False, "1 hides upload and delete and makes the store refuse writes (for a public link)"),
    Setting("upload_token", None, "when set, writing from the dashboard (upload, delete) requires this token; unset, "
            "only a dashboard listening on this machine alone (127.0.0.1, the default) writes, for pages opened as "
            "localhost or 127.0.0.1; empty is an error"),
    Setting("upload_token_name", None, "the name a claims import made with the upload token is credited to on the "
            "Sources page (\"imported via upload with token NAME\"); the token itself, or a hash of it, is never shown"),
    Setting("max_upload_mb", 200, "largest log accepted (upload and `python -m ingest`), in MiB (2^20 bytes), "
            "measured after gunzip"),
    Setting("ingest_timeout_s", 300, "an upload's parse (and then its store) is stopped after this many seconds"),
    Setting("ingest_memory_mb", 2048, "address space an upload's worker process may map before it is stopped"),
    Setting("ingest_file_mb", 2048, "largest file an upload's worker may write (an unpacked archive member, a spool "
            "of steps; the store's own file is not counted) before it is stopped"),
    Setting("data_dir", str(DEFAULT_DATA_DIR), "folder holding the curated CSVs that `init` loads"),
    Setting("lock_wait_s", 10, "how long a connection retries a held DuckDB file before saying the store is busy"),
    Setting("native", True, "0 reads every log with the pure-Polars parsers, never building the compiled scanner"),
    Setting("cache_dir", str(DEFAULT_CACHE_DIR), "folder where the compiled scanner is built on first use"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    db_url: str
    read_only: bool
    upload_token: str | None
    upload_token_name: str | None
    max_upload_mb: int
    ingest_timeout_s: int
    ingest_memory_mb: int
    ingest_file_mb: int
    data_dir: Path
    lock_wait_s: int
    native: bool
    cache_dir: Path

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * MIB

    def browser_writes_refused(self, bind_address: str | None, *, host: str | None = None,
                               origin: str | None = None) -> str | None:
        """Why the dashboard must not write for a browser (upload, annotate, delete), or None when it may. Without
        an upload token, a server that other machines can reach (any address but loopback; unset = every interface)
        writes nothing, and a server on loopback writes only for pages opened by a loopback name (`host` and
        `origin`: the session's or the request's Host and Origin headers; None = not sent): a page of any other
        site can reach it under a name of its own (DNS rebinding), as can a proxy in front of it."""
        if self.read_only or self.upload_token:
            return None
        if not is_loopback(bind_address):
            return ("Writing from the browser is off: this dashboard listens on every address and has no upload "
                    "token. Set PERFLEDGER_UPLOAD_TOKEN, or serve on this machine alone (--server.address 127.0.0.1).")
        return foreign_page(host, origin)

    def may_write_with(self, token: str) -> bool:
        """Whether `token` unlocks writing from the dashboard: always without a configured token, else a
        constant-time comparison of the UTF-8 bytes (hmac refuses non-ASCII str, and timing must not leak)."""
        if not self.upload_token:
            return True
        return hmac.compare_digest(token.encode(), self.upload_token.encode())


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    values = {s.name: _parse(s, env.get(s.env)) for s in SETTINGS}
    return Settings(
        db_url=str(values["db_url"]),
        read_only=bool(values["read_only"]),
        upload_token=_token(env.get("PERFLEDGER_UPLOAD_TOKEN")),
        upload_token_name=(env.get("PERFLEDGER_UPLOAD_TOKEN_NAME") or "").strip() or None,
        max_upload_mb=int(values["max_upload_mb"]),  # type: ignore[arg-type]
        ingest_timeout_s=int(values["ingest_timeout_s"]),  # type: ignore[arg-type]
        ingest_memory_mb=int(values["ingest_memory_mb"]),  # type: ignore[arg-type]
        ingest_file_mb=int(values["ingest_file_mb"]),  # type: ignore[arg-type]
        data_dir=Path(str(values["data_dir"])),
        lock_wait_s=int(values["lock_wait_s"]),  # type: ignore[arg-type]
        native=bool(values["native"]),
        cache_dir=Path(str(values["cache_dir"])),
    )


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data folder alone: what a reader of a curated CSV asks, up to once a line when a format is weighed, so
    without parsing every other setting as load_settings() does (39 µs a call here against 146 µs)."""
    env = os.environ if environ is None else environ
    return Path(str(_parse(_DATA_DIR, env.get(_DATA_DIR.env))))


_DATA_DIR = next(s for s in SETTINGS if s.name == "data_dir")


MIB = 2**20


def is_loopback(address: str | None) -> bool:
    """Whether `address` (a server's bind address, a host name) is this machine's alone: 127.0.0.0/8, ::1 or
    localhost (None or "" = every address). A name that merely starts like one (127.0.0.1.example.com) is not.

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("127.0.0.1.nip.io"), is_loopback("0.0.0.0")
    (True, True, False, False)
    """
    text = (address or "").strip().strip("[]").lower().removesuffix(".")
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return text == "localhost"


def foreign_page(host: str | None, origin: str | None) -> str | None:
    """Why a page's Host or Origin header (None: not sent) names no loopback address, or None when neither does.

    >>> foreign_page("localhost:8501", "http://127.0.0.1:8501") is None, foreign_page("evil.example:8501", None)[:81]
    (True, 'Writing from the browser is off for this page: it was opened as evil.example:8501')
    """
    names = [("Host", host, urlsplit(f"//{host}").hostname if host else None),
             ("Origin", origin, urlsplit(origin).hostname if origin else None)]
    for header, value, name in names:
        if value is not None and not is_loopback(name):
            return (f"Writing from the browser is off for this page: it was opened as {value[:100]} ({header}), not "
                    "as localhost or 127.0.0.1, and this dashboard has no upload token (a web page of another site "
                    "can reach a dashboard on this machine under a name of its own). Open it as localhost, or set "
                    "PERFLEDGER_UPLOAD_TOKEN.")
    return None


def browser_upload_mb(max_upload_mb: int) -> int:
    """The upload widget's and Streamlit server's size limit (whole MB) that lets every file of `max_upload_mb` MiB
    through: the browser counts decimal MB (10^6 bytes; 2^20 on Windows), the server 2^20; the MiB limit itself
    is then checked by the ingest path, with its own sentence."""
    return math.ceil(max_upload_mb * MIB / 10**6)


def _token(raw: str | None) -> str | None:
    """The upload token: None when unset; set but empty (`-e PERFLEDGER_UPLOAD_TOKEN=` of an unset shell variable)
    is a mistake, never "no token"."""
    if raw is not None and not raw.strip():
        raise InvalidSetting("PERFLEDGER_UPLOAD_TOKEN is set but empty: set a token, or unset the variable to serve "
                             "without one (then only a dashboard on 127.0.0.1 writes)")
    return raw


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _parse(setting: Setting, raw: str | None) -> str | int | bool | None:
    if raw is None:
        return setting.default
    if isinstance(setting.default, bool):
        if raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise InvalidSetting(f"{setting.env} should be 1 or 0, got {raw!r}")
    if isinstance(setting.default, int):
        try:
            value = int(raw)
        except ValueError:
            raise InvalidSetting(f"{setting.env} should be an integer, got {raw!r}") from None
        if value <= 0:
            raise InvalidSetting(f"{setting.env} should be positive, got {raw!r}")
        return value
    return raw
