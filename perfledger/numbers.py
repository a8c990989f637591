"""How every figure reads, on every page, table, chart, tooltip and CSV: one rule, owned here.

- A figure as stored (a source's or a log's own number) reads exactly as stored: every significant digit it has,
  thousands grouped (1,880; 3,147.895).
- A derived figure (recomputed by perfledger.calc) reads at SIGNIFICANT significant digits, never fewer than its
  whole digits (30,298.7; 0.389930; 1,234,568); the CSV holds every digit.
- Chart ticks alone read shorter: they mark the scale, and the tooltip and the table say the figure.
- A share of a whole stored as a fraction (MFU, HFU, scaling efficiency, a relative difference) reads in % on every
  surface: its column is labelled "(%)" and its value is 100 x the fraction (perfledger.names says which).

A table reaches a reader through `for_reading` (display units, names); the screen then rounds its derived columns
(`rounded`) and prints every float column with GRID_FORMAT, the shortest text of the (rounded) value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import polars as pl

from perfledger import names

SIGNIFICANT = 6  # a derived figure's significant digits in a table, a tooltip, a metric or a sentence
PERCENT_CLEAN_DIGITS = 14  # 100 x a stored fraction, rid of float noise (0.57 x 100 = 56.99999999999999)
GRID_FORMAT = "%,g"  # Streamlit's printf: the number's shortest text, thousands grouped
TOOLTIP_FORMAT = ","  # d3: the value's own digits (12 at most), thousands grouped; derived data arrive rounded
STORED_HELP = "As stored: every digit the source or the log printed."
DERIVED_HELP = f"Derived: {SIGNIFICANT} significant digits here (never fewer than the whole digits); the CSV holds every digit."

# Table columns holding a figure in the unit its row's unit column names (a share stored as a fraction reads in %).
VALUE_COLUMNS = ("value", "reported", "recomputed", "printed", "first value", "second value", "baseline value",
                 "candidate value", "level", "median of runs before", "reference", "reference line", "normalized")
UNIT_COLUMN_OF = {"normalized": "normalized unit"}  # any other value column's unit is in "unit"


def derived(value: float | None) -> float | None:
    """A derived figure at the rule's precision: SIGNIFICANT significant digits, every whole digit kept.

    >>> derived(30298.712967493244), derived(0.3899299765378443), derived(1234567.89), derived(None)
    (30298.7, 0.38993, 1234568.0, None)
    """
    if value is None or not math.isfinite(value) or value == 0:
        return value
    return round(value, max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))))


def derived_expr(column: pl.Expr) -> pl.Expr:
    """`derived` over a float column, vectorised: a figure of more than SIGNIFICANT whole digits keeps them all."""
    whole = column.abs() >= 10 ** (SIGNIFICANT - 1)
    return pl.when(whole).then(column.round(0)).otherwise(column.round_sig_figs(SIGNIFICANT))


def percent_expr(fraction: pl.Expr) -> pl.Expr:
    """A fraction as a percentage, without the float noise the multiplication adds (a stored 0.57 reads 57)."""
    return (fraction * 100).round_sig_figs(PERCENT_CLEAN_DIGITS)


def significant_digits(value: float) -> int:
    """The significant digits of a float's shortest text (what a grid showing it as stored prints).

    >>> significant_digits(30298.7), significant_digits(0.00125), significant_digits(1880.0), significant_digits(1e-7)
    (6, 3, 4, 1)
    """
    mantissa = repr(abs(float(value))).split("e")[0].removesuffix(".0")
    return len(mantissa.replace(".", "").lstrip("0")) if "." in mantissa else len(mantissa)


def within_rule(value: float) -> bool:
    """Whether a derived figure on screen is at the rule's precision (no more digits than SIGNIFICANT, or than its
    whole digits)."""
    if not math.isfinite(value) or value == 0:
        return True
    whole = max(0, math.floor(math.log10(abs(value))) + 1)
    return significant_digits(value) <= max(SIGNIFICANT, whole)


def text(value: float | None, unit: str = "", *, stored: bool = False) -> str:
    """A figure in a sentence or a headline metric: as stored, or derived at the rule's precision; thousands
    grouped; "—" when there is none.

    >>> text(30298.712967493244, "tokens/s"), text(3147.895, "s", stored=True), text(None)
    ('30,298.7 tokens/s', '3,147.895 s', '—')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    shown = value if stored or isinstance(value, int) else derived(value)
    number = f"{int(shown):,}" if float(shown).is_integer() and abs(shown) < 1e15 else f"{shown:,}"  # type: ignore[arg-type]
    return f"{number} {unit}".rstrip() if unit not in ("%", "x") else f"{number}{unit}"


def percent_text(fraction: float | None, *, stored: bool = False) -> str:
    """A share stored as a fraction, as it reads everywhere: "38.993%".

    >>> percent_text(0.3899299765378443), percent_text(0.57, stored=True)
    ('38.993%', '57%')
    """
    if fraction is None:
        return "—"
    return text(float(f"{fraction * 100:.{PERCENT_CLEAN_DIGITS}g}"), "%", stored=stored)


def figure_text(metric: str, value: float | None, unit: str | None, *, stored: bool = True) -> str:
    """A figure named and in the unit it reads in: "MFU = 40%", "tokens/s/device = 1,880 tokens/s/device".

    >>> figure_text("mfu", 0.4, "fraction"), figure_text("step_time_s", 0.452, "s")
    ('MFU = 40%', 'step time = 0.452 s')
    """
    shown = percent_text(value, stored=stored) if unit == names.FRACTION else text(value, unit or "", stored=stored)
    return f"{names.metric_name(metric)} = {shown}"


# ----------------------------------------------------------------------------------------------- tables


def for_reading(frame: pl.DataFrame) -> pl.DataFrame:
    """A page's table in the units and words a reader reads (the screen, and the CSV with `labelled`): each share
    column (perfledger.names) and each value whose row's unit is "fraction" in %, its unit "%"; metric ids in a
    `metric` column named (perfledger.names.metric_name). Full precision: the screen rounds, the CSV does not."""
    shares = [c for c in frame.columns if names.is_share(c) and frame.schema[c].is_numeric()]
    frame = frame.with_columns(percent_expr(pl.col(c)).alias(c) for c in shares)
    for value in (c for c in VALUE_COLUMNS if c in frame.columns and frame.schema[c].is_numeric()):
        unit = UNIT_COLUMN_OF.get(value, "unit")
        if unit in frame.columns and frame.schema[unit] == pl.String:
            frame = frame.with_columns(pl.when(_fraction(unit)).then(percent_expr(pl.col(value))).otherwise(pl.col(value)))
    for unit in {UNIT_COLUMN_OF.get(c, "unit") for c in VALUE_COLUMNS} & set(frame.columns):
        if frame.schema[unit] == pl.String:
            frame = frame.with_columns(pl.when(_fraction(unit)).then(pl.col(unit).str.replace(names.FRACTION, names.PERCENT))
                                       .otherwise(pl.col(unit)))
    for column in ("metric", "figure"):
        if column in frame.columns and frame.schema[column] == pl.String:
            frame = frame.with_columns(pl.col(column).replace_strict(names.metric_names(), default=pl.col(column)))
    if "field" in frame.columns and frame.schema["field"] == pl.String:  # a result's fields, by name (its permalink)
        frame = frame.with_columns(pl.col("field").replace_strict(names.column_labels(), default=pl.col("field")))
    if "configuration" in frame.columns and frame.schema["configuration"] == pl.String:  # a campaign's, stored as JSON
        frame = frame.with_columns(pl.col("configuration").map_elements(names.settings_in_words, return_dtype=pl.String))
    return frame


def _fraction(unit: str) -> pl.Expr:
    """Whether a row's unit is a fraction: "fraction", or a label ending so ("MFU (fraction)")."""
    return (pl.col(unit) == names.FRACTION) | pl.col(unit).str.ends_with(f"({names.FRACTION})")


def rounded(frame: pl.DataFrame, stored: Iterable[str] = ()) -> pl.DataFrame:
    """The table as the screen shows it: every float column not `stored` at the rule's precision."""
    keep = set(stored)
    return frame.with_columns(derived_expr(pl.col(c)).alias(c) for c, dtype in frame.schema.items()
                              if dtype.is_float() and c not in keep)


# ----------------------------------------------------------------------------------------------- charts


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values for a log axis from `low` to `high`: 1, 2, 5 in each decade, or only the powers of ten when
    those would be more than twelve (never 1, 3, 5, 20, 40, 100).

    >>> log_ticks(0.15, 3.1)
    [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    """
    if not (low > 0 and high > 0):
        return []
    first, last = math.floor(math.log10(min(low, high))), math.ceil(math.log10(max(low, high)))
    for steps in ((1, 2, 5), (1,)):
        ticks = [float(f"{m * 10.0 ** e:.12g}") for e in range(first, last + 1) for m in steps]
        ticks = _spanning(ticks, min(low, high), max(low, high))
        if len(ticks) <= 12:
            return ticks
    return ticks


def _spanning(ticks: Sequence[float], low: float, high: float) -> list[float]:
    """The ticks within [low, high] and the one on each side of it, so the axis ends on a tick."""
    below = [t for t in ticks if t <= low][-1:]
    above = [t for t in ticks if t >= high][:1]
    return sorted({*below, *(t for t in ticks if low < t < high), *above})


_NUMBER_IN_TEXT = re.compile(r"(?<![\w.#/])\d{1,3}(?:,\d{3})*(?:\.\d+)?(?![\w.])|(?<![\w.#/])\d+\.\d+(?![\w.])")


def numbers_in(sentence: str) -> list[str]:
    """The decimal numbers a sentence prints (grouped or not; ids after '#', versions and file names left out)."""
    return [m.group(0) for m in _NUMBER_IN_TEXT.finditer(sentence) if "." in m.group(0)]
