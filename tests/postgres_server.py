"""A throwaway PostgreSQL cluster for the tests, started from the server binaries on the machine.

`initdb` and `pg_ctl` refuse to run as root, so when the tests run as root the cluster is created and
started as the `postgres` user (`runuser -u postgres --`) in a temporary folder that user owns. The server
listens on 127.0.0.1 and a free port, trusts local connections, and is stopped (`pg_ctl stop -m immediate`)
when the session ends. Set PERFLEDGER_TEST_PG_URL to an admin URL (one allowed to CREATE DATABASE) to use a
server you started instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import sqlalchemy as sa
from psycopg import sql

ENV_URL = "PERFLEDGER_TEST_PG_URL"


@dataclass(frozen=True, slots=True)
class PgServer:
    """Where the admin connection goes; `url(db)` names one database on it, for SQLAlchemy."""

    host: str
    port: int
    user: str
    password: str | None = None
    admin_db: str = "postgres"

    def url(self, database: str) -> str:
        return sa.URL.create("postgresql+psycopg", self.user, self.password, self.host, self.port, database) \
            .render_as_string(hide_password=False)

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               dbname=self.admin_db, autocommit=True)

    def create_database(self, name: str, *, template: str | None = None) -> str:
        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            query = sql.SQL("{} TEMPLATE {}").format(query, sql.Identifier(template))
        with self.admin() as conn:
            conn.execute(query)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection:
    """A plain psycopg connection to a `postgresql+psycopg://` URL, for what a test sets up behind the store."""
    return psycopg.connect(sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False),
                           autocommit=autocommit)


def find_bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl: PATH first, then where Debian puts them (newest version)."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).resolve().parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    return Path(found[-1]).parent if found else None


def _version(pg_ctl: str) -> tuple[int, ...]:
    return tuple(int(part) for part in Path(pg_ctl).parts[-3].split(".") if part.isdigit())


def server_from_url(url: str) -> PgServer:
    u = sa.make_url(url)
    return PgServer(u.host or "127.0.0.1", u.port or 5432, u.username or "postgres", u.password,
                    u.database or "postgres")


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _run(*argv: str) -> None:
    subprocess.run(_as_postgres(list(argv)), check=True, capture_output=True, text=True)


def _wait_ready(server: PgServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with server.admin():
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


PORT_TRIES = 5


def _start_on_a_free_port(bin_dir: Path, data: Path, log: Path, timeout_s: float, options: str) -> int:
    """`pg_ctl start` on a port free a moment ago; another process (a parallel test worker, another program) may
    take it in between, so a start refused for the address in use is tried again on another port."""
    def start(port: int) -> int:
        _run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", f"-h 127.0.0.1 -p {port} {options}", "-l", str(log),
             "-w", "-t", str(int(timeout_s)), "start")
        return port

    for _ in range(PORT_TRIES - 1):
        try:
            return start(_free_port())
        except subprocess.CalledProcessError:
            if "already in use" not in (log.read_text(errors="replace") if log.exists() else ""):
                raise
            log.unlink()
    return start(_free_port())


@contextmanager
def temporary_server(timeout_s: float = 30.0, *, data_on: Path | None = None, wal_apart: bool = False,
                     settings: Sequence[str] = ()) -> Iterator[PgServer]:
    """Start a fresh cluster (initdb, pg_ctl start), yield it, stop it and remove its folder.

    `data_on`: a folder (a small volume) holding the data directory instead of the temporary folder; `wal_apart`:
    the write-ahead log kept in the temporary folder (initdb --waldir), off that volume; `settings`: more server
    settings as name=value, after (so over) the defaults.
    """
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries not found (pg_ctl on PATH or /usr/lib/postgresql/*/bin); "
                           "install Debian's postgresql package or set " + ENV_URL)
    root = Path(tempfile.mkdtemp(prefix="perfledger-pg-"))
    data, sock = (data_on or root) / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        for folder in (root, sock, *([data_on] if data_on else [])):
            shutil.chown(folder, "postgres", "postgres")
    user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
    try:
        wal = ["--waldir", str(root / "pg_wal")] if wal_apart else []
        _run(str(bin_dir / "initdb"), "-D", str(data), *wal, "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync",
            "--locale=C")
        port = _start_on_a_free_port(bin_dir, data, root / "server.log", timeout_s,
                                     f"-k {sock} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                                     " -c timezone=America/New_York"  # not UTC, so a test sees any time-zone slip
                                     + "".join(f" -c {setting}" for setting in settings))
        server = PgServer("127.0.0.1", port, user)
        _wait_ready(server, timeout_s)
        yield server
    except subprocess.CalledProcessError as exc:
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        raise RuntimeError(f"{exc.cmd[-1]} failed: {exc.stderr or exc.stdout}\n{log[-2000:]}") from exc
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
        if data_on is not None:
            shutil.rmtree(data, ignore_errors=True)
