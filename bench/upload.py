"""The browser's upload path against the command line, in one run on one 1 MB Megatron log: `python -m ingest FILE
--dry-run` (parse and summarise, nothing stored) vs the Runs page in Chromium from choosing the file to its preview
drawn, then "Apply to the preview" (a new choice, parsed again) and "Store this run" until the run's page is drawn.
Target: the preview at most 2 s slower than the command line. Each repeat uploads a copy with one more line, so no
upload is recognised as stored."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import inputs
from measure import ROOT, stats
from store_pages import CHROMIUM, _serve

LOG_BYTES = 10**6
TARGET_EXTRA_S = 2.0
_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
_FRESH = "() => !document.querySelector('[data-stale=\"true\"]')"


def _settled(page: Any) -> None:
    page.wait_for_timeout(150)  # let the action reach the server before asking whether the script runs
    page.wait_for_selector(_IDLE, timeout=120_000)
    page.wait_for_function(_FRESH, timeout=120_000)


def _copy(log: Path, work: Path, i: int) -> Path:
    path = work / f"upload_{i}_{log.name}"
    path.write_bytes(log.read_bytes() + f"# bench copy {i}\n".encode())
    return path


def _cli_dry_run(path: Path, url: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ingest", str(path), "--db", url, "--dry-run"], cwd=ROOT, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def _through_the_browser(page: Any, base: str, path: Path) -> dict[str, float]:
    page.goto(f"{base}/runs", timeout=120_000)
    _settled(page)
    panel = page.locator('[data-testid="stExpander"]').filter(has_text="Upload a training log")
    panel.locator("summary").click()
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    panel.locator('input[type="file"]').set_input_files(str(path))
    page.get_by_text("Steady tokens/s/device").wait_for(timeout=120_000)
    _settled(page)
    out["preview_s"] = time.perf_counter() - t0
    devices = page.get_by_label("Devices (0 = not stated)")
    devices.fill("2")
    t0 = time.perf_counter()
    page.get_by_role("button", name="Apply to the preview").click()
    _settled(page)
    out["apply_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.get_by_role("button", name="Store this run").click()
    page.wait_for_url("**run=*", timeout=120_000)
    page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Stored as run").wait_for(timeout=120_000)
    _settled(page)
    out["store_s"] = time.perf_counter() - t0
    return out


def bench_upload(work: Path, repeats: int) -> dict[str, Any]:
    """Median seconds of the command line's dry run and of each browser step, and the preview's excess."""
    if not CHROMIUM.exists():
        return {"error": "needs /usr/bin/chromium"}
    from playwright.sync_api import sync_playwright

    from perfledger import store

    db = work / "upload_bench.duckdb"
    url = f"duckdb:///{db}"
    db.unlink(missing_ok=True)
    store.init_store(store.engine_from_url(url), ROOT / "data")
    shutil.copy(db, work / "upload_cli.duckdb")
    log = work / "upload_megatron_1MB.log"
    inputs.build("megatron", LOG_BYTES, log)
    proc, base = _serve(ROOT / "app.py", url)
    cli, steps = [], list[dict[str, float]]()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
            for i in range(repeats + 1):  # the first, warming, round is not counted
                path = _copy(log, work, i)
                ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
                seconds = _through_the_browser(ctx.new_page(), base, path)
                ctx.close()
                dry = _cli_dry_run(path, f"duckdb:///{work / 'upload_cli.duckdb'}")
                if i:
                    steps.append(seconds)
                    cli.append(dry)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    out: dict[str, Any] = {"log_mb": log.stat().st_size / 10**6, "cli_dry_run_s": stats(cli)}
    for key in ("preview_s", "apply_s", "store_s"):
        out[key] = stats([s[key] for s in steps])
    out["preview_extra_s"] = out["preview_s"]["median"] - out["cli_dry_run_s"]["median"]
    out["target_extra_s"] = TARGET_EXTRA_S
    return out
