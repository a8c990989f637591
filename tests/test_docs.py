"""The README keeps up with the code: every setting, metric, log format and CLI command is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfledger.cli import build_parser
from perfledger.figures import FIGURES
from perfledger.settings import SETTINGS
from perfledger.vocabulary import Metric

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI_TEST_COMMAND = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
START_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt && .venv/bin/python -m perfledger init"
    " && .venv/bin/streamlit run app.py"
)


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.env)
def test_every_setting_is_in_the_readme(setting: object) -> None:
    assert setting.env in README  # type: ignore[attr-defined]


@pytest.mark.parametrize("metric", list(Metric), ids=str)
def test_every_metric_is_in_the_readme(metric: Metric) -> None:
    assert f"`{metric.value}`" in README
    assert metric.unit


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_calc_figure_is_in_the_readme(name: str) -> None:
    assert f"`{name}`" in README


def test_every_cli_command_is_in_the_readme() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command in sub.choices:  # type: ignore[union-attr]
        assert f"python -m perfledger {command}" in README


def test_readme_test_command_is_what_ci_runs() -> None:
    assert CI_TEST_COMMAND in README


def test_readme_is_a_front_door_under_10_kb() -> None:
    assert len(README.encode()) < 10_000


def test_readme_first_commands_start_the_dashboard_then_run_the_tests() -> None:
    assert code_blocks(README)[:2] == [START_COMMAND, CI_TEST_COMMAND]


def test_every_local_link_in_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#:]+)\)", README)
    assert {"docs/overview.png", "docs/logs.md", "docs/team-server.md", "bench/README.md"} <= set(links)
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_screenshot_stays_small() -> None:
    assert (ROOT / "docs" / "overview.png").stat().st_size < 300_000
