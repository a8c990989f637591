"""A chunk's lines -> segments (lines between launch markers): configuration lines for Python, iteration lines
read vectorized (Polars, or the compiled scanner in ingest/native/labeled_scan.c). Reads no parser state."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

from ingest import native
from ingest.parsers._common import null_column
from ingest.parsers.megatron.fields import (
    _ANCHORS,
    _CONFIG_HINT,
    _CONFIG_USED,
    _COUNTS,
    _EXTRACTED,
    _FIELDS,
    _ITERATION,
    _LABELED,
    _LAUNCH,
    _SCAN_SPEC,
    _SCANNED,
    _SPELLINGS,
    _STEP,
    _escape,
    _Labeled,
)
from ingest.text import MAX_LINE_BYTES


@dataclass(frozen=True, slots=True)
class _StepLines:
    """The iteration lines of one segment: step number, line number and every _FIELDS value, read vectorized."""

    step: pl.Series
    lineno: pl.Series
    cols: dict[str, pl.Series]


@dataclass(frozen=True, slots=True)
class _Segment:
    """Lines between two launch markers (or a chunk edge): what feed_prepared needs, read without parser state."""

    starts_launch: bool
    config_lines: list[str]
    steps: _StepLines | None


def _segments(text: pl.Series, first_lineno: int, ascii: bool) -> list[_Segment]:
    """ascii: every line is ASCII, known from the chunk at no cost (see _read_labeled)."""
    if text.is_empty():
        return []
    starts = text.str.contains(_LAUNCH).arg_true().to_list()
    bounds = sorted({0, *starts, text.len()})
    return [_segment(text.slice(a, b - a), first_lineno + a, a in starts, ascii)
            for a, b in pairwise(bounds)]


def _segment(seg: pl.Series, lineno0: int, starts_launch: bool, ascii: bool) -> _Segment:
    is_iter = seg.str.contains(_ITERATION, literal=True)
    rest = seg.filter(~is_iter)
    config_lines = rest.filter(_may_configure(rest)).to_list()
    if not is_iter.any():
        return _Segment(starts_launch, config_lines, None)
    return _segment_of(starts_launch, config_lines, is_iter.arg_true().cast(pl.Int64) + lineno0,
                       _extract(seg.filter(is_iter), ascii))


def _may_configure(lines: pl.Series) -> pl.Series:
    return lines.str.contains(_CONFIG_HINT) & lines.str.contains(_CONFIG_USED)


def _segment_of(starts_launch: bool, config_lines: list[str], pos: pl.Series, cols: dict[str, pl.Series]) -> _Segment:
    """The segment of these iteration lines (line numbers pos, fields cols): those without a step number dropped."""
    step = cols.pop("_step")
    found = step.is_not_null()
    if not found.all():
        pos, step, cols = pos.filter(found), step.filter(found), {k: v.filter(found) for k, v in cols.items()}
    if step.is_empty():
        return _Segment(starts_launch, config_lines, None)
    return _Segment(starts_launch, config_lines, _StepLines(step, pos, cols))


def _scanned_segments(text: str, first_lineno: int) -> list[_Segment] | None:
    """_segments of the chunk's lines, read by the compiled scanner (ingest/native/labeled_scan.c); None where it
    is not available or declines the chunk (not ASCII, a line past MAX_LINE_BYTES, a field only a regex reads).

    The scanner reads each _LABELED field by position as _read_labeled does and leaves every line it is not sure
    of to _by_regex, so the segments are _segments' own; _extract's shortcuts (counts stated as zero, consumed
    samples only without a batch size) are applied here on the same columns. 2.4x faster on a Megatron log.
    """
    scanner = native.labeled_scan()
    if scanner is None or (found := scanner.scan(text, *_SCAN_SPEC, MAX_LINE_BYTES)) is None:
        return None
    import numpy as np  # only here: 12 MB that a process reading no large Megatron log does not pay

    n_lines, launch, other_at, others, iter_at, starts, ends, values, status, nonzero = found
    if not n_lines:
        return []
    starts_launch = np.frombuffer(launch, np.int64).tolist()
    other_at, iter_at = np.frombuffer(other_at, np.int64), np.frombuffer(iter_at, np.int64)
    configuring = _may_configure(pl.Series("line", others, dtype=pl.String)).to_numpy()
    config_at, config_lines = other_at[configuring], [line for line, keep in zip(others, configuring) if keep]
    scanned = _Scanned(text, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64),
                       {name: (np.frombuffer(values[j], np.int64 if name == "_step" else np.float64),
                               np.frombuffer(status[j], np.uint8), np.frombuffer(nonzero[j], np.uint8))
                        for j, name in enumerate(_SCANNED)})
    bounds = sorted({0, *starts_launch, n_lines})
    segments = []
    for a, b in pairwise(bounds):
        c0, c1 = np.searchsorted(config_at, [a, b])
        r0, r1 = (int(r) for r in np.searchsorted(iter_at, [a, b]))
        config = config_lines[c0:c1]
        if r0 == r1:
            segments.append(_Segment(a in starts_launch, config, None))
            continue
        pos = pl.Series("lineno", iter_at[r0:r1] + first_lineno, dtype=pl.Int64)
        segments.append(_segment_of(a in starts_launch, config, pos, scanned.columns(r0, r1)))
    return segments


@dataclass(frozen=True, slots=True)
class _Scanned:
    """The scanner's reading of a chunk's iteration lines: where each line is in text, and per field its
    values, status (0 label absent, 1 read, 2 left to the regex) and whether the line states the count non-zero."""

    text: str
    starts: Any
    ends: Any
    fields: dict[str, tuple[Any, Any, Any]]

    def columns(self, r0: int, r1: int) -> dict[str, pl.Series]:
        """_extract's columns for iteration lines r0..r1 (one segment)."""
        cols = {name: self._column(name, r0, r1) for name in ("_step", "gbs")}
        gbs_missing = bool(cols["gbs"].filter(cols["_step"].is_not_null()).null_count())
        for name in _FIELDS:
            # the scanner declined every chunk holding the anchor of a field not in _LABELED
            if name not in _LABELED or (name == "consumed_samples" and not gbs_missing):
                cols[name] = null_column(name, r1 - r0, pl.Float64)
            elif name not in cols:
                cols[name] = self._column(name, r0, r1)
        return {name: cols[name] for name in _EXTRACTED}

    def _column(self, name: str, r0: int, r1: int) -> pl.Series:
        # numpy (~100 ms) loads only when a Megatron log is scanned, not with every `python -m ingest`
        import numpy as np

        values, status, nonzero = (a[r0:r1] for a in self.fields[name])
        if name in _COUNTS and not nonzero.any():  # _read's zero path: 0 where the label is, as a literal test
            return pl.Series(name, np.ma.masked_array(np.zeros(r1 - r0), status == 0), dtype=pl.Float64)
        column = pl.Series(name, np.ma.masked_array(values, status != 1), dtype=_dtype(name))
        if (ask := np.flatnonzero(status == 2)).size:
            lines = pl.Series("line", [self.text[self.starts[r0 + i]:self.ends[r0 + i]] for i in ask.tolist()],
                              dtype=pl.String)
            column = column.scatter(ask, lines.to_frame().select(_by_regex(name)).to_series())
        return column

def _extract(lines: pl.Series, ascii: bool) -> dict[str, pl.Series]:
    """The step number ("_step", Int64) and each _FIELDS value (Float64) of each line, null where absent.

    Passes that cannot match are skipped: fields whose anchor is in no line, skipped/nan counts when no line's
    count is non-zero (then 0 where the label is present), consumed samples when every line has the batch size.
    An anchor in the first line is known to be present without a pass over the others.
    """
    frame = lines.to_frame("line")
    first = lines[0] if lines.len() else ""
    unseen = {name: anchor for name, anchor in _ANCHORS.items() if anchor not in first} | _SPELLINGS
    counts = {f"{name} > 0": _escape(_ANCHORS[name]) + r"\s*[1-9]" for name in _COUNTS}
    probe = {name: True for name in _ANCHORS} | _any_of(frame, {k: _escape(a) for k, a in unseen.items()}) \
        | _any_of(frame, counts)
    cols = _read(frame, ["_step", *(name for name in _FIELDS if name != "consumed_samples")], probe, ascii)
    gbs_missing = bool(cols["gbs"].filter(cols["_step"].is_not_null()).null_count())
    cols |= _read(frame, ["consumed_samples"], probe | {"consumed_samples": probe["consumed_samples"] and gbs_missing},
                  ascii)
    return cols


def _any_of(frame: pl.DataFrame, patterns: dict[str, str]) -> dict[str, bool]:
    """For each pattern, whether any line matches it. Usually none does, and one pass of the alternation says
    so for all (a regex of literals is one SIMD scan: 5x less than a pass per pattern)."""
    if not patterns:
        return {}
    line = pl.col("line")
    if not frame.select(line.str.contains("|".join(patterns.values())).any()).item():
        return dict.fromkeys(patterns, False)
    return frame.select(line.str.contains(rx).any().alias(key) for key, rx in patterns.items()).row(0, named=True)


def _read(frame: pl.DataFrame, names: list[str], probe: dict[str, bool], ascii: bool) -> dict[str, pl.Series]:
    """names' columns, each the cheapest exact way: a null column when its anchor is in no line, a literal test
    for a count no line states as non-zero, by position for a _LABELED field (unless a line spells its label
    another way), by regex otherwise."""
    line = pl.col("line")
    absent = [name for name in names if not probe.get(name, True)]
    zero = [name for name in names if name in _COUNTS and probe[name] and not probe[f"{name} > 0"]]
    by_position = {name: _LABELED[name] for name in names if name in _LABELED and name not in absent + zero
                   and not any(probe[spelling] for spelling in _LABELED[name].also_spelled)}
    cols = frame.with_columns(  # with_columns: a null column gets the frame's height even when all are literals
        *(pl.lit(None, dtype=pl.Float64).alias(name) for name in absent),
        *(pl.when(line.str.contains(_ANCHORS[name], literal=True)).then(0.0).otherwise(None).alias(name)
          for name in zero),
        *(_by_regex(name) for name in names if name not in absent + zero and name not in by_position),
    ).drop("line").to_dict() | _read_labeled(frame, by_position, ascii)
    return {name: cols[name] for name in names}


def _by_regex(name: str) -> pl.Expr:
    pattern = _STEP if name == "_step" else _FIELDS[name]
    return pl.col("line").str.extract(pattern, 1).cast(_dtype(name), strict=False).alias(name)


def _dtype(name: str) -> type[pl.DataType]:
    return pl.Int64 if name == "_step" else pl.Float64


_WINDOW = 64  # bytes after a label searched for the closing "|"; a value printed wider is read by regex


def _read_labeled(frame: pl.DataFrame, fields: dict[str, _Labeled], ascii: bool) -> dict[str, pl.Series]:
    """Each field's value as _by_regex reads it, found by position: the label's first occurrence, the text up to
    the next "|", checked against the field's token shape (a match, not a capture) and cast.

    Where that finds nothing on a line that has the label (the first occurrence is not the field, the value is
    wider than _WINDOW bytes, or the line is not ASCII, where a window could end inside a character), that line
    is read by the regex, which may match a later occurrence: the result is _by_regex's on every line.
    A regex capture per line and field was most of the parse; reading by position is 1.4x faster on a Megatron log.
    """
    if not fields:
        return {}
    line = pl.col("line")
    plain = None if ascii else line.str.len_bytes() == line.str.len_chars()

    def window(field: _Labeled) -> pl.Expr:
        at = line.str.find(field.label, literal=True)
        start = (at if plain is None else pl.when(plain).then(at)) + len(field.label)
        return line.cast(pl.Binary).bin.slice(start, _WINDOW).cast(pl.String)

    windows = frame.lazy().select(*(
        expr for name, field in fields.items() for expr in (
            line.str.find(field.label, literal=True).is_not_null().alias(f"has {name}"), window(field).alias(name))
    )).collect()
    values = windows.select(*(
        expr for name, field in fields.items() for expr in (
            pl.col(f"has {name}"), _value_in_window(pl.col(name), field, name).alias(name))
    ))
    out = {}
    for name in fields:
        value, missed = values[name], values[f"has {name}"] & values[name].is_null()
        if missed.any():
            rows = missed.arg_true()
            value = value.scatter(rows, frame["line"].gather(rows).to_frame().select(_by_regex(name)).to_series())
        out[name] = value
    return out


def _value_in_window(window: pl.Expr, field: _Labeled, name: str) -> pl.Expr:
    end = window.str.find("|", literal=True)  # bin.slice reads a null length as "to the end": no "|", no token
    token = pl.when(end.is_not_null()).then(window.cast(pl.Binary).bin.slice(0, end).cast(pl.String))
    text = token.str.splitn("/", 2).struct.field("field_0") if field.tail else token
    return pl.when(token.str.contains(field.token)).then(text.str.strip_chars().cast(_dtype(name), strict=False))

