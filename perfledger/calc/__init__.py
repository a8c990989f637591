"""Pure calculations: every derived number a page or the CLI shows comes from a function here.

Each public function's docstring states its formula, units and a published example (run as doctests).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def formula_of(func: Callable[..., Any]) -> str:
    """The formula block of a calc function's docstring: the indented line(s) holding '='."""
    doc = inspect.getdoc(func) or ""
    lines = [line.strip() for line in doc.splitlines() if "=" in line and not line.lstrip().startswith(">>>")]
    return "\n".join(lines) or doc.splitlines()[0] if doc else func.__name__
