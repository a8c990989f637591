"""The image runs exactly the README's tested commands, read from the Dockerfile (test_docker.py runs the image)."""

from __future__ import annotations

import json
import re
import shlex

from tests.conftest import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()
README = (ROOT / "README.md").read_text()
STREAMLIT_FLAGS = ("--server.address 0.0.0.0", "--server.headless true", "--client.showErrorDetails none",
                   "--browser.gatherUsageStats false")


def instruction(name: str) -> list[str]:
    joined = DOCKERFILE.replace("\\\n", " ")
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.startswith(name + " ")]


def readme_first_command() -> str:
    block = README.split("## Two commands on a fresh machine", 1)[1].split("```bash\n", 1)[1]
    return block.split("\n", 1)[0]


def test_image_installs_and_starts_with_the_readme_commands() -> None:
    readme = [part.strip() for part in readme_first_command().split("&&")]
    install, init, serve = " && ".join(readme[:2]), readme[2], readme[3]
    assert install == "python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt"
    assert f"RUN {install}" in DOCKERFILE
    cmd = json.loads(instruction("CMD")[0])
    assert cmd[:2] == ["sh", "-c"]
    start, serve_in_image = cmd[2].split(" && exec ")
    assert start == init and serve_in_image.startswith(serve + " ")
    assert all(flag in serve_in_image for flag in STREAMLIT_FLAGS)


def test_image_runs_as_a_non_root_user_with_the_store_in_a_volume() -> None:
    assert instruction("FROM") == ["python:3.11-slim"]
    assert instruction("USER") and instruction("USER")[-1] not in ("root", "0")
    volume = json.loads(instruction("VOLUME")[0])[0]
    url = re.search(r"ENV PERFLEDGER_DB_URL=(\S+)", DOCKERFILE)
    assert url is not None and url.group(1).startswith(f"duckdb:///{volume}/")


def test_healthcheck_asks_streamlit_with_python_not_curl() -> None:
    check = instruction("HEALTHCHECK")[0]
    argv = json.loads(check.split("CMD", 1)[1])
    assert argv[0].endswith("python") and argv[1] == "-c" and "/_stcore/health" in argv[2]
    compile(argv[2], "healthcheck", "exec")
    assert "curl" not in check and "wget" not in check


def test_readme_shows_docker_run_for_duckdb_and_postgresql() -> None:
    team = README.split("## Team server", 1)[1].split("\n## ", 1)[0]
    runs = [line for line in team.splitlines() if line.startswith("docker run")]
    assert any("-v perfledger-data:/var/lib/perfledger" in r for r in runs)
    assert "PERFLEDGER_DB_URL='postgresql+psycopg://" in team
    assert all(shlex.split(r.rstrip("\\"))[:2] == ["docker", "run"] for r in runs)


def test_image_byte_compiles_the_sources_it_copied() -> None:
    """PYTHONDONTWRITEBYTECODE keeps Python from caching them at run time: each CLI process would compile them."""
    runs = instruction("RUN")
    compiled = [r for r in runs if "-m compileall" in r]
    assert compiled
    args = shlex.split(compiled[0])
    named = args[args.index("-q") + 1:]
    assert set(named) >= {"app.py", "dashboard.py", "screens", "ingest", "perfledger"}
    assert all((ROOT / name).exists() for name in named)  # compileall exits 0 past a folder that is not there
    assert DOCKERFILE.index("COPY . .") < DOCKERFILE.index("-m compileall")


def test_image_builds_the_compiled_scanner_and_drops_the_compiler_in_the_same_layer() -> None:
    """A layer cannot shrink the one before it: gcc purged in a later RUN would still be in the image."""
    builds = [r for r in instruction("RUN") if "-m ingest.native" in r]
    assert len(builds) == 1
    install, build, purge = (builds[0].index(s) for s in ("apt-get install", "-m ingest.native", "apt-get purge"))
    assert install < build < purge and "gcc" in builds[0][purge:]
    cache = re.search(r"ENV PERFLEDGER_CACHE_DIR=(\S+)", DOCKERFILE)
    assert cache is not None and cache.group(1).startswith("/app/")
    assert DOCKERFILE.index("COPY . .") < DOCKERFILE.index("-m ingest.native") < DOCKERFILE.index("USER ")
