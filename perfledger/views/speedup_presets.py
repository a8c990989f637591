"""The Speedups page's ready-made comparisons, read from data/speedup_presets.csv and checked row by row.

Columns: `id` (the `p` URL value), `label` (the button), `title` (the page's description), `models` (model ids,
" | "-separated, in the table's order), `metric` (the metric compared), `source` (only this source's rows; blank:
any), `base` and `candidate` (the two sides of the computed pairs as `field=value; ...`, fields accelerator
(exact id), framework, version, strategy, precision (each "contains"); both blank: no computed pairs) and `stored`
(the published ratios shown, as `column=value; ...` on the result's text columns, every pair to hold). The file
is the bundled one (data/, not PERFLEDGER_DATA_DIR): the `p` key's choices are fixed when the page's state is
declared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl
from sqlalchemy import String

from perfledger import schema
from perfledger.data_files import csv_rows
from perfledger.errors import DataFileError
from perfledger.settings import DEFAULT_DATA_DIR
from perfledger.views._shared import contains
from perfledger.vocabulary import Metric

FILE_NAME = "speedup_presets.csv"
HEADER = ("id", "label", "title", "models", "metric", "source", "base", "candidate", "stored")
SIDE_FIELDS = ("accelerator", "framework", "version", "strategy", "precision")
RATIO_METRIC = "relative_throughput"  # what a published speedup is stored as
_SLUG = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Side:
    """Filters naming one side of a comparison; "" matches anything."""

    accelerator: str = ""
    framework: str = ""
    version: str = ""
    strategy: str = ""
    precision: str = ""

    def expr(self) -> pl.Expr:
        conds = [pl.lit(True)]
        if self.accelerator:
            conds.append(pl.col("accelerator_id") == self.accelerator)
        for column, value in (("framework", self.framework), ("framework_version", self.version),
                              ("strategy", self.strategy), ("precision", self.precision)):
            if value:
                conds.append(contains(column, value))
        return pl.all_horizontal(conds)

    def label(self) -> str:
        parts = (self.accelerator, self.framework, self.version, self.strategy, self.precision)
        return " · ".join(v for v in parts if v) or "any"


@dataclass(frozen=True, slots=True)
class Preset:
    """One comparison: computed pairs of `base` and `cand` rows on `metric`, and the published ratios `stored`
    names (result column, value) of `models`, from `source` when one is given."""

    models: tuple[str, ...]
    metric: str
    base: Side | None
    cand: Side | None
    stored: Pairs
    source: str | None = None
    id: str = "custom"
    label: str = ""
    title: str = ""

    def stored_expr(self) -> pl.Expr:
        """Rows whose cells hold every `stored` pair (a null cell holds none)."""
        if not self.stored:
            return pl.lit(True)
        return pl.all_horizontal([pl.col(column) == value for column, value in self.stored])

    def shows_ratio(self) -> pl.Expr:
        """A stored row this preset shows among its published ratios."""
        shown = (pl.col("metric") == RATIO_METRIC) & pl.col("model_id").is_in(self.models) & self.stored_expr()
        return shown & (pl.col("source_id") == self.source) if self.source else shown


@lru_cache(maxsize=1)
def presets() -> tuple[Preset, ...]:
    """The bundled presets, in the file's order, read once per process."""
    return read_presets(DEFAULT_DATA_DIR / FILE_NAME)


def read_presets(path: Path) -> tuple[Preset, ...]:
    """Every row of `path` as a Preset; DataFileError naming the file, the line and the reason at the first bad
    row."""
    found: dict[str, Preset] = {}
    for line, cells in csv_rows(path, HEADER):
        try:
            preset = _preset(cells)
        except ValueError as exc:
            raise DataFileError(path.name, line, str(exc)) from None
        if preset.id in found:
            raise DataFileError(path.name, line, f"preset {preset.id} is already given above")
        found[preset.id] = preset
    return tuple(found.values())


def _preset(cells: list[str]) -> Preset:
    if len(cells) != len(HEADER):
        raise ValueError(f"expected {len(HEADER)} cells, got {len(cells)}")
    row = dict(zip(HEADER, (c.strip() for c in cells), strict=True))
    if not _SLUG.match(row["id"]) or row["id"] == "custom":
        raise ValueError(f"id {row['id']!r} must be a lowercase slug other than custom (the page's own comparison)")
    if not row["label"] or not row["title"]:
        raise ValueError("label and title must not be empty")
    models = tuple(m.strip() for m in row["models"].split("|") if m.strip())
    if not models or not all(_SLUG.match(m) for m in models):
        raise ValueError(f"models must be model ids separated by ' | ', got {row['models']!r}")
    if row["metric"] not in {m.value for m in Metric}:
        raise ValueError(f"metric {row['metric']!r} is not a metric id of perfledger.vocabulary")
    base, cand = _side(row["base"], "base"), _side(row["candidate"], "candidate")
    if (base is None) != (cand is None):
        raise ValueError("base and candidate are given together or both left blank")
    stored = _stored(row["stored"])
    if base is None and not stored:
        raise ValueError("a preset with no base and candidate needs a stored filter, or it shows nothing")
    return Preset(models, row["metric"], base, cand, stored, row["source"] or None, row["id"], row["label"],
                  row["title"])


def pairs(text: str, what: str) -> Pairs:
    """`name=value; name=value` as pairs, in order; ValueError for a part with no name or no value."""
    out = []
    for part in (p.strip() for p in text.split(";") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"{what} part {part!r} is not name=value")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def _side(text: str, what: str) -> Side | None:
    given = dict(pairs(text, what))
    unknown = sorted(set(given) - set(SIDE_FIELDS))
    if unknown:
        raise ValueError(f"{what} names {', '.join(unknown)}; a side's fields are {', '.join(SIDE_FIELDS)}")
    return Side(**given) if given else None


_TEXT_COLUMNS = frozenset(c.name for c in schema.result.columns if isinstance(c.type, String))


def _stored(text: str) -> Pairs:
    stored = pairs(text, "stored")
    unknown = sorted({c for c, _ in stored} - _TEXT_COLUMNS)
    if unknown:
        raise ValueError(f"stored names {', '.join(unknown)}, not a text column of the result table")
    return stored
