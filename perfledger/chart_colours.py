"""The charts' colours: every accelerator keeps one colour on every chart; runs and series, which are not
accelerators, each take their own hue."""

from __future__ import annotations

import polars as pl

ACCELERATOR_COLOURS: dict[str, str] = {
    "a100-40gb": "#9ccc65", "a100-80gb": "#76b900", "a800-80gb": "#558b2f", "v100-32gb": "#c5e1a5",
    "h100-sxm": "#1b5e20", "h100-pcie": "#2e7d32", "h800": "#33691e", "h200": "#00bfa5", "gh200": "#00838f",
    "b200": "#0277bd", "b300": "#01579b", "gb200": "#1565c0", "gb300": "#0d47a1",
    "mi250": "#e53935", "mi250x": "#c62828", "mi300x": "#b71c1c", "mi355x": "#880e4f",
    "gaudi2": "#1e88e5", "gaudi3": "#1976d2", "cs-2": "#f57c00", "sn30": "#8e24aa", "bow-ipu": "#6d4c41",
    "tpu-v4": "#fbc02d", "tpu-v5e": "#f9a825", "tpu-v5p": "#f57f17",
}
FALLBACK_COLOUR = "#78909c"

# Runs overlaid on one chart: distinct hues in this order, the main run first (Tableau 10, readable by most kinds of
# colour vision); a run's colour says which run, not which accelerator.
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
               "#7f7f7f")


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

