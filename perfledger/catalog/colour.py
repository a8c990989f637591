"""An accelerator's chart colour, a catalog cell (data/accelerators.csv's `colour`): `#rrggbb`, or empty for the
charts' fallback grey. One accelerator keeps its colour on every chart."""

from __future__ import annotations

import re

_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")


def colour_problem(colour: object) -> str | None:
    """Why `colour` is not a chart colour, or None when it is one (or empty).

    >>> colour_problem("#76b900") is None, colour_problem(None) is None
    (True, True)
    >>> colour_problem("green")
    "colour must be #rrggbb (six hex digits, e.g. #76b900) or empty, got 'green'"
    """
    if colour is None or colour == "" or (isinstance(colour, str) and _HEX.match(colour)):
        return None
    return f"colour must be #rrggbb (six hex digits, e.g. #76b900) or empty, got {colour!r}"
