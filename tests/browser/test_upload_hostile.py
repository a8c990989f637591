"""A hostile upload never holds the server: it is parsed in a worker process while the health check answers."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LOGS, Server, assert_no_exception, open_app, settle

pytestmark = pytest.mark.browser

NEMO = LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
HEALTH_WITHIN_S = 1.0


def hostile_nemo(folder: Path) -> Path:
    """The NeMo log with one 1 MiB DLL line of keys without values in its middle (quadratic for a naive regex)."""
    lines = NEMO.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    path = folder / "nemo_1mib_line.log"
    path.write_bytes(b"".join(lines[:middle]) + b"DLL 2025-01-01 00:00:00.0 - INFO " + b"a " * (1 << 19) + b"\n"
                     + b"".join(lines[middle:]))
    return path


class HealthProbe(threading.Thread):
    """Asks the server's health check every 0.2 s until stopped; records how long each answer took (None: none)."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.answers, self.done = base, list[float | None](), threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=HEALTH_WITHIN_S) as resp:
                    self.answers.append(time.monotonic() - started if resp.status == 200 else None)
            except OSError:
                self.answers.append(None)
            self.done.wait(0.2)


def test_a_1_mib_line_upload_keeps_the_health_check_answering(server: Server, page: Page, tmp_path: Path) -> None:
    path = hostile_nemo(tmp_path)
    open_app(page, server, "/runs")
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    panel.locator("summary").click()
    probe = HealthProbe(server.base)
    probe.start()
    try:
        panel.locator('input[type="file"]').set_input_files(str(path))
        expect(panel).to_contain_text("nemo", timeout=60_000)
        settle(page)
    finally:
        deadline = time.monotonic() + 5  # a fast upload can end before three probes: let them answer
        while len(probe.answers) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        probe.done.set()
        probe.join()
    assert_no_exception(page)
    expect(panel).to_contain_text("lines skipped")
    answered = [a for a in probe.answers if a is not None]
    assert len(probe.answers) >= 3 and len(answered) == len(probe.answers), probe.answers
    assert max(answered) < HEALTH_WITHIN_S
