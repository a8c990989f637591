"""Every command the pages and the docs print exists: each `python -m MODULE [SUBCOMMAND ...]` (or `perfledger
SUBCOMMAND` in backticks) found in screens/, perfledger/views/, README.md and docs/*.md answers `--help` with exit 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import ENTRY_POINTS, run
from tests.conftest import ROOT

PRINTED_IN = [*sorted((ROOT / "screens").glob("*.py")), *sorted((ROOT / "perfledger" / "views").glob("*.py")),
              ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"(?:python3? -m ([a-z_][\w.]*)|`(perfledger)) ?([^`\n\"'&|;#]*)")
WORD = re.compile(r"[a-z][a-z-]*")
MAX_SUBCOMMANDS = 2  # `perfledger catalog link`, `perfledger keys add`: what follows is arguments


def command_of(module: str, rest: str) -> tuple[str, ...]:
    """The module and the subcommand words that follow it (lower-case words, before any argument or option)."""
    words: list[str] = []
    for token in rest.split():
        if not WORD.fullmatch(token) or len(words) == MAX_SUBCOMMANDS:
            break
        words.append(token)
    return (module, *words)


def printed_commands() -> dict[tuple[str, ...], str]:
    """Each command printed, with the first place it is printed ("file:line")."""
    found: dict[tuple[str, ...], str] = {}
    for path in PRINTED_IN:
        for lineno, line in enumerate(path.read_text().splitlines(), start=1):
            for m in COMMAND.finditer(line):
                found.setdefault(command_of(m.group(1) or m.group(2), m.group(3)),
                                 f"{path.relative_to(ROOT)}:{lineno}")
    return found


def test_the_extraction_finds_the_commands_the_readme_documents() -> None:
    found = printed_commands()
    assert {("perfledger", "init"), ("perfledger", "catalog", "link"), ("perfledger", "keys", "add"), ("ingest",),
            ("perfledger", "export")} <= set(found)
    assert command_of("perfledger", "calc model_tflops model=llama2-70b") == ("perfledger", "calc")
    assert command_of("perfledger", "import") == ("perfledger", "import")


# The project's own modules answer in this process (tests/cli_runner.py: their main() is what `python -m` runs);
# one command per module is still run as a process below, so the module entry points themselves are proved too;
# other modules answer as processes.
@pytest.mark.parametrize(("command", "where"), sorted(printed_commands().items()), ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_every_printed_command_answers_help(command: tuple[str, ...], where: str, tmp_path: Path) -> None:
    env = os.environ | {"PERFLEDGER_DB_URL": f"duckdb:///{tmp_path / 'help.duckdb'}"}
    if command[0] in ENTRY_POINTS:
        done = run(*command, "--help", env=env)
        assert done.returncode == 0, f"{where}: python -m {' '.join(command)} --help: {done.stderr[-500:]}"
        assert "usage:" in done.stdout
        return
    done = subprocess.run([sys.executable, "-m", *command, "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{where}: python -m {' '.join(command)} --help: {done.stderr[-500:]}"


@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
def test_each_module_answers_help_as_a_process(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-500:]
