"""No view names an accelerator or a strategy in its code: what a view filters by is the URL state or data
(data/speedup_presets.csv, the catalog). A URL key's default (`u.key("ca", "h200")`) and the state a link carries
(`TimeToTrainView(accelerator="h200")`) are states, and may name one."""

from __future__ import annotations

import ast
import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfledger.settings import DEFAULT_DATA_DIR, PROJECT_ROOT

VIEWS = sorted((PROJECT_ROOT / "perfledger" / "views").glob("*.py"))
FILTERED = ("accelerator_id", "strategy")  # a comparison of these with a written string filters by an id


def _column(path: Path, name: str) -> set[str]:
    with path.open(encoding="utf-8", newline="") as f:
        return {row[name] for row in csv.DictReader(f) if row[name]}


IDS = _column(DEFAULT_DATA_DIR / "accelerators.csv", "id") | _column(DEFAULT_DATA_DIR / "results.csv", "strategy")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _is_state(call: ast.AST) -> bool:
    """A URL key's declaration (u.key(...)) or a view state built for a link (SomethingView(...))."""
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name == "key" or name.endswith("View")


def _in_state(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if _is_state(node):
            return True
    return False


def _names_a_filtered_column(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and n.value in FILTERED for n in ast.walk(node))


def _offences(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = _parents(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in IDS and not _in_state(node, parents):
            yield f"{path.name}:{node.lineno}: {node.value!r} is an accelerator or strategy id written in a view"
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            written = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
            if written and any(_names_a_filtered_column(s) for s in sides if s not in written):
                yield f"{path.name}:{node.lineno}: compares {', '.join(FILTERED)} with a written {written[0].value!r}"


@pytest.mark.parametrize("path", VIEWS, ids=lambda p: p.name)
def test_no_view_filters_by_an_accelerator_or_strategy_it_names(path: Path) -> None:
    assert list(_offences(path)) == []


def test_the_rule_finds_the_filters_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('import polars as pl\nfrom perfledger import urlstate as u\n'
                      'keep = [r for r in rows if r["accelerator_id"] == "h200" or r["strategy"] != "zero1"]\n'
                      'expr = pl.col("strategy") == "some-new-strategy"\n'
                      'default = u.key("ca", "h200")\nlink = TimeToTrainView(accelerator="a800-80gb")\n',
                      encoding="utf-8")
    assert sorted(o.split(": ", 1)[0] for o in _offences(sample)) == ["sample.py:3"] * 4 + ["sample.py:4"]
