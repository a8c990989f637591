"""The README keeps up with the code: every setting, metric, log format and CLI command is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfledger.cli import build_parser
from perfledger.figures import FIGURES
from perfledger.settings import SETTINGS
from perfledger.vocabulary import Metric

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


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
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    command = ci.strip().splitlines()[-1]
    assert command in README
