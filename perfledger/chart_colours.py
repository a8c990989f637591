"""The charts' colours: every accelerator keeps one colour on every chart, its catalog row's `colour`
(data/accelerators.csv; `catalog add` sets it for a new accelerator); runs and series, which are not accelerators,
each take their own hue."""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from perfledger.catalog.record import bundled_catalog

Colours = tuple[tuple[str, str], ...]  # (accelerator id, #rrggbb): hashable, so a chart is remembered by it
FALLBACK_COLOUR = "#78909c"  # an accelerator whose row gives no colour, or that no row names

# Runs overlaid on one chart: distinct hues in this order, the main run first (Tableau 10, readable by most kinds of
# colour vision); a run's colour says which run, not which accelerator.
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
               "#7f7f7f")


@lru_cache(maxsize=1)
def bundled_colours() -> Colours:
    """The colours of the catalog shipped under data/, read once per process: what a chart uses when its caller
    passes none (the pages pass their store's, perfledger.store.accelerator_colours)."""
    rows = bundled_catalog().accelerators
    return tuple((i, str(r["colour"])) for i, r in sorted(rows.items()) if r.get("colour"))


def accelerator_colour(accelerator_id: str, colours: Colours | None = None) -> str:
    """The colour of `accelerator_id` in `colours` (default: the bundled catalog's), else FALLBACK_COLOUR."""
    return dict(bundled_colours() if colours is None else colours).get(accelerator_id, FALLBACK_COLOUR)


def series_colours(data: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(series, colour) of each series in order, each its own hue (RUN_COLOURS, then their shades): two series of
    one accelerator drawn in two greens of the catalogue read as one; the legend names each series' accelerator."""
    domain = data["series"].unique(maintain_order=True).to_list()
    return domain, [shade(RUN_COLOURS[i % len(RUN_COLOURS)], i // len(RUN_COLOURS)) for i in range(len(domain))]


def shade(colour: str, turn: int) -> str:
    """`colour` (#rrggbb) itself for turn 0, then alternately darker and lighter by 40% steps.

    >>> shade("#76b900", 0), shade("#76b900", 1), shade("#76b900", 2)
    ('#76b900', '#476f00', '#add566')
    """
    if turn == 0:
        return colour
    step = min(0.9, 0.4 * ((turn + 1) // 2))
    target = 0 if turn % 2 else 255
    rgb = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c + (target - c) * step):02x}" for c in rgb)

