"""The real dashboard in headless Chromium: one Streamlit server and one browser per session.

The server runs `streamlit run app.py` in a subprocess against a temporary DuckDB file seeded from data/
(PERFLEDGER_DB_URL); each test gets a fresh browser context. Screenshots go to test-artifacts/browser/.
Chromium is Debian's /usr/bin/chromium (never `playwright install`); without it the suite is skipped.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from sqlalchemy import Engine

from perfledger import store

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
REBOUND = "rebound.example"  # a name of another site pointed at this machine, as DNS rebinding does
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"]
START_TIMEOUT_S = 60.0
UI_TIMEOUT_MS = 60_000  # a loaded 2-core machine takes 10-20 s for a first render
expect.set_options(timeout=UI_TIMEOUT_MS)  # assertions wait as long as actions: charts draw late on a busy host
VIEWPORT = {"width": 1440, "height": 1000}


@dataclass(frozen=True)
class Server:
    """A running dashboard: its base URL, the store URL it uses, and the server's log file."""

    base: str
    db_url: str
    log: Path
    opened: list[str] = field(default_factory=list)  # paths requested through open_app, in order

    def url(self, path: str = "") -> str:
        return f"{self.base}/{path.lstrip('/')}"

    def engine(self) -> Engine:
        return store.engine_from_url(self.db_url)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def seeded_template(seeded_db_file: Path) -> Path:
    """The session's store seeded from data/ (tests.conftest): each server gets a copy."""
    return seeded_db_file


def start_server(folder: Path, template: Path, environ: dict[str, str] | None = None,
                 address: str = "127.0.0.1") -> tuple[subprocess.Popen[bytes], Server]:
    """`streamlit run app.py` on a free port of `address` (reached through loopback) against a copy of the seeded
    store (and any further settings in `environ`); waits for health. A port another process (a parallel test
    worker) took between the look-up and the start is tried again with another."""
    shutil.copy(template, folder / "perfledger.duckdb")
    db_url = f"duckdb:///{folder / 'perfledger.duckdb'}"
    env = {**os.environ, "PERFLEDGER_DB_URL": db_url, **(environ or {})}
    log = folder / "streamlit.log"
    for _ in range(PORT_TRIES - 1):
        started = _start_on(free_port(), address, env, log)
        if started is not None:
            return started[0], Server(started[1], db_url, log)
    started = _start_on(free_port(), address, env, log)
    if started is None:
        pytest.fail(f"no free port for streamlit in {PORT_TRIES} tries:\n{log.read_text(errors='replace')[-3000:]}")
    return started[0], Server(started[1], db_url, log)


PORT_TRIES = 5


def _start_on(port: int, address: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    """The server process and its base URL once healthy; None when the port was taken meanwhile."""
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
           "--server.address", address, "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    # our process says it listens: a server of another worker on the same port would answer the health check too
    while not (_listening(log, port) and _healthy(base) and proc.poll() is None):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            text = log.read_text(errors="replace")
            if "already in use" in text:
                return None
            pytest.fail(f"streamlit did not become healthy on {base}:\n{text[-3000:]}")
        time.sleep(0.2)
    return proc, base


def _listening(log: Path, port: int) -> bool:
    text = log.read_text(errors="replace")
    return "You can now view" in text and f":{port}\n" in text


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_template: Path) -> Iterator[Server]:
    proc, srv = start_server(tmp_path_factory.mktemp("browser-server"), seeded_template)
    yield srv
    stop_server(proc)


@pytest.fixture()
def untouched_server(request: pytest.FixtureRequest, tmp_path: Path, seeded_template: Path) -> Iterator[Server]:
    """A server no browser has talked to yet: the session's when still untouched, else a dedicated one."""
    session_server: Server = request.getfixturevalue("server")
    if not session_server.opened:
        yield session_server
        return
    proc, srv = start_server(tmp_path, seeded_template)
    yield srv
    stop_server(proc)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's /usr/bin/chromium (apt-get install -y chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def new_page(browser: Browser) -> Iterator[Callable[[], Page]]:
    """new_page() -> a Page in a fresh browser context (no cookies, no session); all closed after the test."""
    contexts = []

    def make() -> Page:
        ctx = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
        ctx.set_default_timeout(UI_TIMEOUT_MS)
        contexts.append(ctx)
        return ctx.new_page()

    yield make
    for ctx in contexts:
        ctx.close()


@pytest.fixture()
def page(new_page: Callable[[], Page]) -> Page:
    return new_page()


# ------------------------------------------------------------------------------------------ helpers

APP = '[data-testid="stApp"]'
EXCEPTION = '[data-testid="stException"]'
CELLS = '[data-testid="stDataFrame"] [role="gridcell"]'


def settle(page: Page) -> None:
    """Wait until the script run the last action started has finished and nothing on screen is stale."""
    page.wait_for_timeout(150)  # let a widget change reach the server before asking whether it runs
    page.wait_for_selector(f'{APP}[data-test-script-state="notRunning"]')
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")


def open_app(page: Page, server: Server, path: str) -> Page:
    server.opened.append(path)
    page.goto(server.url(path))
    settle(page)
    return page


def assert_no_exception(page: Page) -> None:
    expect(page.locator(EXCEPTION)).to_have_count(0)


def table_cells(page: Page, index: int = 0, *, having: str = "") -> list[str]:
    """The rendered cells of the page's `index`-th table (the rows glide-data-grid has drawn).

    `having` waits until some cell shows that text: the grid's accessible copy is redrawn after the rerun ends.
    """
    cells = page.locator('[data-testid="stDataFrame"]').nth(index).locator('[role="gridcell"]')
    cells.first.wait_for(state="attached")
    if having:
        expect(cells.filter(has_text=having)).not_to_have_count(0)
    return cells.all_inner_texts()


def select(page: Page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text(label, exact=True))
    box.locator('[role="combobox"], input').first.click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def segment(page: Page, name: str) -> None:
    page.locator('[data-testid="stButtonGroup"] button').filter(has_text=name).click()
    settle(page)


def screenshot(page: Page, name: str) -> Path:
    """The whole page (Streamlit scrolls inside its main block, so the viewport grows to fit it first)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]')?.scrollHeight ?? 0")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": min(max(int(height), VIEWPORT["height"]), 6000)})
    page.wait_for_timeout(300)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(VIEWPORT)
    return path
