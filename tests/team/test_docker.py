"""The Docker image built from the Dockerfile as it is, run, and used: health, an ingest inside the container, a
page in Chromium, and two containers started together on one new PostgreSQL database.

The engine is podman (Debian's `podman` and `runc`). With no registry reachable, tests/team/base_image.sh makes the
image the Dockerfile starts from out of Debian's packages (mmdebstrap); `--format docker` keeps the HEALTHCHECK.
The base image and the build's layers stay in podman's storage, so a second run rebuilds only what changed
(about two minutes in all when only the sources changed; 5-9 minutes from nothing on a loaded 2-core
machine). So it runs with PERFLEDGER_TEST_DOCKER=1, in a step of its own in .ci/run (before the README's test
command, which skips it), and is skipped there only where podman or mmdebstrap is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect, sync_playwright

from perfledger import store
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, EXCEPTION, UI_TIMEOUT_MS, VIEWPORT, free_port, settle
from tests.conftest import LOGS, ROOT

if TYPE_CHECKING:
    from tests.postgres_server import PgServer

IMAGE = "localhost/perfledger:test"
BASE_IMAGE_SCRIPT = ROOT / "tests" / "team" / "base_image.sh"
# podman asks runc for more open files than a host with a hard limit of 20,000 allows ("error setting rlimit").
RUN_LIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768")
HEALTHY_WITHIN_S = 240.0  # init and Streamlit's start on a loaded 2-core machine
LOG = LOGS / "bigscience_meg_gpt2_perf_n16_v100.out"

pytestmark = [
    pytest.mark.skipif(os.environ.get("PERFLEDGER_TEST_DOCKER") != "1",
                       reason="builds the image: 5-9 minutes the first time; PERFLEDGER_TEST_DOCKER=1 (.ci/run's own step)"),
    pytest.mark.skipif(shutil.which("podman") is None or shutil.which("mmdebstrap") is None,
                       reason="needs podman and mmdebstrap (apt-get install -y podman runc mmdebstrap)"),
]


def podman(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *argv], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode:
        raise AssertionError(f"podman {' '.join(argv[:3])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def image() -> str:
    base = subprocess.run(["bash", str(BASE_IMAGE_SCRIPT)], capture_output=True, text=True, timeout=600, check=False)
    assert base.returncode == 0, f"{BASE_IMAGE_SCRIPT.name} failed:\n{base.stderr[-3000:]}"
    podman("build", "--format", "docker", "--quiet", "-t", IMAGE, str(ROOT), timeout=900)
    return IMAGE


def healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
            return bool(resp.status == 200 and resp.read() == b"ok")
    except OSError:
        return False


def wait_healthy(names_and_bases: list[tuple[str, str]]) -> None:
    deadline = time.monotonic() + HEALTHY_WITHIN_S
    waiting = list(names_and_bases)
    while waiting:
        for name, base in list(waiting):
            if healthy(base):
                waiting.remove((name, base))
            elif not running(name) or time.monotonic() > deadline:
                raise AssertionError(f"container {name} did not become healthy:\n{logs(name)[-3000:]}")
        time.sleep(1)


def running(name: str) -> bool:
    return podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "true"


def logs(name: str) -> str:
    done = subprocess.run(["podman", "logs", name], capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


@pytest.fixture()
def start(image: str) -> Iterator[Callable[..., list[str]]]:
    """start(*options_of_each) -> the names of new containers of the image, one per tuple of run options, started
    by one `podman start` (so at the same moment); all removed after the test."""
    with ExitStack() as stack:

        def make(*options_of_each: tuple[str, ...]) -> list[str]:
            names = []
            for options in options_of_each:
                name = f"perfledger-test-{uuid.uuid4().hex[:10]}"
                stack.callback(subprocess.run, ["podman", "rm", "-f", "-t", "2", name], capture_output=True, check=False)
                podman("create", "--name", name, *RUN_LIMITS, *options, image)
                names.append(name)
            podman("start", *names)
            return names

        yield make


@pytest.mark.browser
def test_image_serves_a_page_and_stores_a_log_ingested_inside_it(start: Callable[..., list[str]]) -> None:
    port = free_port()
    [name] = start(("-p", f"127.0.0.1:{port}:8501"))
    base = f"http://127.0.0.1:{port}"
    wait_healthy([(name, base)])
    podman("healthcheck", "run", name)  # the image's own HEALTHCHECK, kept by --format docker

    podman("cp", str(LOG), f"{name}:/tmp/{LOG.name}")
    ingested = podman("exec", name, ".venv/bin/python", "-m", "ingest", f"/tmp/{LOG.name}", "--json")
    assert json.loads(ingested.stdout.splitlines()[0])["steps"] > 0

    if not CHROMIUM.exists():
        pytest.skip("needs Debian's /usr/bin/chromium (apt-get install -y chromium)")
    # In a thread of its own: the browser tests' session Playwright may be running its loop on this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_runs_page_lists, f"{base}/runs", LOG.name).result()


def _runs_page_lists(url: str, text: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(url)
        settle(page)
        expect(page.get_by_text(text).first).to_be_visible()
        expect(page.locator(EXCEPTION)).to_have_count(0)
        browser.close()


@pytest.mark.postgres
def test_two_containers_started_together_on_one_new_postgresql_database_both_serve(
        start: Callable[..., list[str]], pg_server: PgServer) -> None:
    database = f"perfledger_docker_{uuid.uuid4().hex[:8]}"
    url = pg_server.create_database(database)
    try:
        ports = [free_port(), free_port()]
        # The host's network, so the containers reach the test's server on 127.0.0.1; each serves its own port.
        names = start(*[("--network", "host", "-e", f"PERFLEDGER_DB_URL={url}", "-e", f"STREAMLIT_SERVER_PORT={port}")
                        for port in ports])
        wait_healthy([(name, f"http://127.0.0.1:{port}") for name, port in zip(names, ports, strict=True)])
        engine = store.engine_from_url(url)
        try:
            assert store.has_data(engine)
        finally:
            engine.dispose()
    finally:
        pg_server.drop_database(database)

