"""The house rules a reader of the code can check by reading it: module sizes, no import cycle, and every import
inside a function saying why it is there (an optional or heavy dependency loaded only when used, a cycle it
breaks, a child process that should start light)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("perfledger", "ingest", "screens")
SCRIPTS = ("app.py", "dashboard.py")
MODULE_MAX_LINES = 400
PAGE_MAX_LINES = 120
PRAGMA = re.compile(r"#|type:\s*ignore(\[[^\]]*\])?|noqa(:\s*[A-Z]+[0-9]+(,\s*[A-Z]+[0-9]+)*)?|pragma:[^#]*")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def source(self) -> str:
        return self.path.read_text()


@dataclass(frozen=True)
class LocalImport:
    module: str
    line: int
    explained: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Module]:
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    paths += [ROOT / script for script in SCRIPTS]
    return {module_name(path): Module(module_name(path), path) for path in paths}


MODULES = project_modules()


def is_page_script(module: Module) -> bool:
    return module.path.parent == ROOT / "screens" and not module.path.name.startswith("_")


def line_count(module: Module) -> int:
    return len(module.source.splitlines())


def imported_base(module: Module, node: ast.ImportFrom) -> str:
    """The absolute name `from ... import` reads from, relative levels resolved against `module`."""
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    package = parts if module.is_package else parts[:-1]
    kept = package[: len(package) - (node.level - 1)]
    return ".".join(kept + ([node.module] if node.module else []))


def import_targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The project modules an import statement loads: `from pkg import name` is pkg.name when that is a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = imported_base(module, node)
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def is_type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads: top-level, and inside top-level try/if blocks (not `if TYPE_CHECKING:`)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(handler.body for handler in node.handlers)):
                yield from module_level_imports(block)
        elif isinstance(node, ast.If) and not is_type_checking_block(node):
            yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)


def import_graph() -> dict[str, set[str]]:
    """{module: the project modules it imports when it loads}."""
    graph: dict[str, set[str]] = {}
    for module in MODULES.values():
        tree = ast.parse(module.source)
        targets = {target for node in module_level_imports(tree.body) for target in import_targets(module, node)}
        graph[module.name] = {target for target in targets if target in MODULES and target != module.name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def says_why(comment: str) -> bool:
    """Whether a comment holds words beside its tool pragmas (`# type: ignore[...]` or `# noqa: F401` say no why)."""
    return bool(re.search(r"[A-Za-z]{3,}", PRAGMA.sub(" ", comment)))


def comment_lines(source: str) -> dict[int, str]:
    """{line: the comment on it that says a why}, read by the tokenizer (a `#` inside a string is no comment)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0]: token.string for token in tokens if token.type == tokenize.COMMENT and says_why(token.string)}


def function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    found = {id(sub): sub for function in functions for sub in ast.walk(function)
             if isinstance(sub, ast.Import | ast.ImportFrom)}
    return sorted(found.values(), key=lambda node: node.lineno)


def local_imports(name: str, source: str) -> list[LocalImport]:
    """A module's imports inside function bodies. One is explained by a comment on its line or on a comment line
    just above; an import right after an explained one shares its why (a group of imports under one comment)."""
    comments = comment_lines(source)
    lines = source.splitlines()
    found: list[LocalImport] = []
    for node in function_imports(ast.parse(source)):
        above = node.lineno - 1
        comment_above = above in comments and lines[above - 1].strip().startswith("#")
        follows_explained = bool(found) and found[-1].explained and found[-1].line == above
        explained = node.lineno in comments or comment_above or follows_explained
        found.append(LocalImport(name, node.lineno, explained))
    return found


def test_no_module_is_over_the_line_limit() -> None:
    too_long = {name: line_count(module) for name, module in MODULES.items() if line_count(module) > MODULE_MAX_LINES}
    assert not too_long, f"modules over {MODULE_MAX_LINES} lines: {too_long}"


def test_no_page_script_is_over_the_line_limit() -> None:
    pages = [module for module in MODULES.values() if is_page_script(module)]
    too_long = {module.name: line_count(module) for module in pages if line_count(module) > PAGE_MAX_LINES}
    assert pages
    assert not too_long, f"page scripts over {PAGE_MAX_LINES} lines: {too_long}"


def test_no_import_cycle_among_the_modules_loaded_at_import() -> None:
    assert not cycles(import_graph()), f"import cycles (modules of each): {cycles(import_graph())}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_import_inside_a_function_says_why(name: str) -> None:
    unexplained = [f"{name}:{found.line}" for found in local_imports(name, MODULES[name].source) if not found.explained]
    assert not unexplained, f"imports inside a function without a comment saying why: {unexplained}"


def test_a_two_module_circle_is_found_with_its_modules() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert cycles(graph) == [["a", "b"]]


def test_a_function_import_is_explained_by_a_comment_on_its_line_or_just_above() -> None:
    source = (
        "def f():\n"
        "    import torch  # optional: only the benchmark needs it\n"
        "def g():\n"
        "    # duckdb's lake extension loads only when a lake is used\n"
        "    import duckdb\n"
        "    import json\n"
        "def h():\n"
        "    x = '#'\n"
        "    import os\n"
        "    import torch.nn  # type: ignore[import-not-found]\n"
    )
    explained = {found.line: found.explained for found in local_imports("example", source)}
    assert explained == {2: True, 5: True, 6: True, 9: False, 10: False}
