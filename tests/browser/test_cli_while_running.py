"""`python -m ingest` from another process stores a log while the dashboard runs; a refresh shows it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import LOGS, ROOT, Server, assert_no_exception, open_app, settle, table_cells

pytestmark = pytest.mark.browser

LOG = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"


def test_cli_ingest_while_the_dashboard_runs_appears_after_refresh(server: Server, page: Page) -> None:
    open_app(page, server, "/runs")  # a live session: the dashboard must not hold the DuckDB lock between reruns
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ingest", str(LOG), "--db", server.db_url, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["created"] is True
    assert took < 20, f"the CLI waited {took:.1f} s for the store"

    page.reload()
    settle(page)
    assert LOG.name in table_cells(page)
    assert_no_exception(page)
