"""How a page's table reads: its columns in reading order (what is compared, its value, the verdict and the source
first), rows sorted as the URL says, and the columns a screen leaves out because every cell is empty.

Each page's module orders its own table with `reading_order`; the registry sorts every table with `sorted_rows`,
so the page, its Download CSV and `python -m perfledger export` give the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def reading_order(frame: pl.DataFrame, first: Sequence[str]) -> pl.DataFrame:
    """`frame` with the `first` columns it has leftmost, in that order, and every other column after them as it was."""
    lead = [c for c in first if c in frame.columns]
    return frame.select(*lead, *[c for c in frame.columns if c not in lead])


def sorted_rows(frame: pl.DataFrame, column: str, descending: bool = False) -> pl.DataFrame:
    """The rows sorted by `column` (empty cells last, ties in the table's own order); the table as it is when
    `column` is empty or not one of its columns.

    >>> sorted_rows(pl.DataFrame({"a": [2, None, 1]}), "a", descending=True)["a"].to_list()
    [2, 1, None]
    """
    if not column or column not in frame.columns:
        return frame
    return frame.sort(column, descending=descending, nulls_last=True, maintain_order=True)


def sort_problem(frame: pl.DataFrame, column: str) -> str:
    """The sentence a page shows when the URL sorts by a column its table does not have ("" when it has it)."""
    if not column or column in frame.columns:
        return ""
    return f"sort={column[:40]!r} names no column of this table; the rows keep the table's order."


def empty_columns(frame: pl.DataFrame) -> list[str]:
    """The columns with no value in any row (null, NaN or blank text): a screen leaves them out; the CSV keeps them.

    >>> empty_columns(pl.DataFrame({"a": [None, None], "b": [1, None], "c": ["", None]}, schema={"a": pl.Float64, "b": pl.Int64, "c": pl.String}))
    ['a', 'c']
    """
    if frame.height == 0:
        return []
    out = []
    for name, dtype in frame.schema.items():
        column = frame[name]
        if dtype.is_float():
            column = column.fill_nan(None)
        elif dtype == pl.String:
            column = column.str.strip_chars().replace("", None)
        if column.null_count() == frame.height:
            out.append(name)
    return out
