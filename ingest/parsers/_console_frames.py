"""The console reader's chunks read in columns: a chunk whose lines are records and blocks of a few shapes is read
by Polars, shape by shape, instead of line by line; the reader's definition (ingest/parsers/key_value_log.py, line
by line) decides every other chunk.

A line's shape is its text with each run of digits replaced by a mark of the run's length (1, 2, 3, 4 or more): the
lines of one shape print the same names in the same places. The first line of a shape is read in full
(ingest/parsers/_console.line_spans) into a plan (ingest/parsers/_console.Shapes); every line of the shape then takes
each value from its own runs of digits, in one Polars expression per value. A chunk is read this way when each of
its lines is a record (a step and a figure), a block's first line (a step alone), or a line in a block's own form (a
framework's line prefix, a table row) following one; lines of a block are merged first value first, as the line by
line reader merges them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from ingest.parsers._console import Plan
from ingest.parsers._records import LINE

SHAPE_MARKS = ((r"\d{4,}", "\x04"), (r"\d{3}", "\x03"), (r"\d{2}", "\x02"), (r"\d", "\x01"))
RECORD, HEADER, PAIRS, NOTHING = "record", "header", "pairs", "nothing"  # what a line of a shape is


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk's lines worth reading as Polars read them: text (a line prefix removed), whether a prefix or a table
    row makes it a block's line, and its shape."""

    frame: pl.DataFrame  # i, text, continues, shape
    whole: list[str]  # the lines as read, for the line by line reader


def shaped(lines: list[str], prefixes: tuple[re.Pattern[str], ...], numbers: list[int]) -> Chunk | None:
    """The lines (numbered `numbers` in the file) in columns; None when a line has a carriage return (progress
    frames: read line by line) or a prefix Polars cannot search for."""
    text = pl.Series("text", lines, dtype=pl.String)
    if not lines or text.str.contains("\r", literal=True).any():
        return None
    frame = pl.DataFrame({"i": pl.int_range(len(lines), eager=True), "text": text,
                          LINE: pl.Series(numbers, dtype=pl.Int64).cast(pl.String)})
    continues = frame["text"].str.contains("│", literal=True) | frame["text"].str.starts_with("|")
    for prefix in prefixes:
        try:
            found = frame["text"].str.contains("^(?:" + prefix.pattern + ")")
            stripped = frame["text"].str.replace("^(?:" + prefix.pattern + ")", "")
        except pl.exceptions.PolarsError:
            return None
        frame = frame.with_columns(text=pl.when(found).then(stripped).otherwise(pl.col("text")))
        continues = continues | found
    shape = pl.col("text")
    for pattern, mark in SHAPE_MARKS:
        shape = shape.str.replace_all(pattern, mark)
    return Chunk(frame.with_columns(continues=continues, shape=shape), lines)


def values(chunk: Chunk, plans: dict[str, tuple[Plan, str]]) -> pl.DataFrame | None:
    """One row per line (i, kind) with a column per name its plan keeps; None when a line's shape is not a record's
    or a block's, or has no plan (its names hold digits)."""
    parts = []
    for shape, rows in chunk.frame.group_by("shape", maintain_order=True):
        plan, kind = plans[str(shape[0])]
        if kind == NOTHING:
            continue
        if plan is None or kind not in (RECORD, HEADER, PAIRS):
            return None
        runs = pl.col("text").str.extract_all(r"\d+")
        parts.append(rows.select("i", "continues", pl.lit(kind).alias("kind"),
                                 pl.when(pl.lit(kind != PAIRS)).then(pl.col(LINE)).alias(LINE),
                                 *(_value(runs, first, blanked, name).alias(name) for name, first, blanked in plan)))
    return pl.concat(parts, how="diagonal_relaxed").sort("i") if parts else None


def _value(runs: pl.Expr, first: int, blanked: str, name: str) -> pl.Expr:
    pieces = blanked.split("\x00")
    parts: list[pl.Expr] = [pl.lit(pieces[0])]
    for k, piece in enumerate(pieces[1:]):
        parts += [runs.list.get(first + k, null_on_oob=True), pl.lit(piece)]
    value = pl.concat_str(parts) if len(parts) > 1 else parts[0]
    if name == "line_time":
        return value.str.replace_all(",", ".", literal=True)
    return value.str.replace(r"^([-+]?\d{1,3}(?:,\d{3})+)", "$1").str.replace_all(r"(\d),(\d{3})", "$1$2")


Rows = list[dict[str, str]]


def blocks(lines: pl.DataFrame, block: dict[str, str] | None,
           merge: Callable[[dict[str, str], dict[str, str]], None]) -> tuple[Rows, dict[str, str] | None] | None:
    """(the chunk's records in order, the block still open at its end) from its lines' values, the block open before
    it first; None when a line in a block's form follows no block's first line, or a line of plain pairs stands
    outside a block (the line by line reader decides those)."""
    group = (pl.col("kind").is_in([RECORD, HEADER])).cum_sum()
    lines = lines.with_columns(group.alias("_group"))
    orphans = lines.filter((pl.col("kind") == PAIRS) & ~pl.col("continues"))
    if orphans.height:
        return None
    heads = lines.filter(pl.col("kind").is_in([RECORD, HEADER])).select("_group", "kind")
    head_kind = dict(zip(heads["_group"].to_list(), heads["kind"].to_list(), strict=True))
    tails = lines.filter(pl.col("kind") == PAIRS)["_group"].unique().to_list()
    if any(g != 0 and head_kind.get(g) != HEADER for g in tails) or (0 in tails and block is None):
        return None
    names = [c for c in lines.columns if c not in ("i", "continues", "kind", "_group")]
    merged = lines.group_by("_group", maintain_order=True).agg(pl.col(names).drop_nulls().first())
    rows = [{k: v for k, v in row.items() if v is not None and k != "_group"} for row in merged.iter_rows(named=True)]
    groups = merged["_group"].to_list()
    out: list[dict[str, str]] = []
    if groups and groups[0] == 0:
        if block is not None:
            merge(block, rows.pop(0))
        groups.pop(0)
    if groups and block is not None:
        out.append(block)
        block = None
    if groups and head_kind[groups[-1]] == HEADER:
        block = rows.pop()
    return out + rows, block
