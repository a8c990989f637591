"""In Chromium: a log of over 200 MiB uploaded on the Runs page is written to disk as it arrives, previewed, and the
server's resident memory stays flat while it does; emptying the box removes the file. (Streamlit's own uploader
held every uploaded byte in the server: a 203 MB preview took it from 269 to 464 MB resident, 662 MB at its peak.)"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from ingest.upload import FOLDER_PREFIX
from tests.browser.conftest import (
    LOGS,
    Server,
    assert_no_exception,
    open_app,
    screenshot,
    settle,
    start_server,
    stop_server,
)
from tests.cli.test_store_faults_cli import big_megatron_log

pytestmark = pytest.mark.browser

MIB = 2**20
FLAT_MIB = 64  # the server's growth allowed while a 200 MiB file arrives and is previewed


class Resident(threading.Thread):
    """Samples a process's resident set size (/proc/PID/status VmRSS) every 20 ms; `peak` in bytes."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def now(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, self.now())
            self.done.wait(0.02)


@pytest.fixture()
def served(tmp_path: Path, seeded_template: Path) -> Iterator[tuple[Server, int, Path]]:
    spool = tmp_path / "tmp"
    spool.mkdir()
    proc, srv = start_server(tmp_path, seeded_template, {"PERFLEDGER_MAX_UPLOAD_MB": "256", "TMPDIR": str(spool)})
    yield srv, proc.pid, spool
    stop_server(proc)


def _panel(page: Page) -> Locator:
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    if not panel.locator(".browse").is_visible():
        panel.locator("summary").click()
    return panel


def _previewed(page: Page, path: Path, steps: str = "") -> None:
    panel = _panel(page)
    panel.locator('input[type="file"]').set_input_files(str(path))
    expect(panel.locator(".status")).to_contain_text(path.name, timeout=180_000)
    expect(panel.get_by_text("Steady tokens/s/device")).to_be_visible(timeout=180_000)
    expect(panel).to_contain_text(f"{steps} steps", timeout=180_000)
    settle(page)


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _uploads(spool: Path) -> list[Path]:
    return [f / "upload" for f in spool.glob(f"{FOLDER_PREFIX}*") if (f / "upload").exists()]


def test_a_200_mib_upload_goes_to_disk_as_it_arrives_and_the_server_memory_stays_flat(
        served: tuple[Server, int, Path], page: Page, tmp_path: Path) -> None:
    server, pid, spool = served
    log = big_megatron_log(tmp_path / "long_megatron.log", 720_000)
    assert log.stat().st_size > 200 * MIB
    open_app(page, server, "/runs")
    _previewed(page, LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out")  # the preview path's modules loaded
    _panel(page).get_by_role("button", name="Remove").click()
    settle(page)
    time.sleep(1)

    resident = Resident(pid)
    before = resident.now()
    resident.start()
    try:
        _previewed(page, log, "720,000")
    finally:
        resident.done.set()
        resident.join()
    grew = (resident.peak - before) / MIB
    print(f"server resident {before / MIB:.0f} MiB -> peak {resident.peak / MIB:.0f} MiB (+{grew:.1f})")
    assert grew < FLAT_MIB, f"server resident {before / MIB:.0f} MiB -> peak {resident.peak / MIB:.0f} MiB"
    assert_no_exception(page)
    screenshot(page, "upload-200-mib-preview")

    [on_disk] = _uploads(spool)
    assert _sha256(on_disk) == _sha256(log)
    _panel(page).get_by_role("button", name="Remove").click()
    deadline = time.monotonic() + 20
    while _uploads(spool) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _uploads(spool) == []
