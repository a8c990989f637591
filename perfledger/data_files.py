"""Rows appended to a curated CSV in the data folder (the key vocabulary, the MLPerf scoring rules): the one place a
command or the dashboard writes a data file, and so the one place that refuses to when writes are off
(PERFLEDGER_READ_ONLY=1 means no write of any kind, the store's or a data file's)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from perfledger.errors import DataFileError, ReadOnlyData
from perfledger.settings import load_settings


def append_rows(path: Path, rows: Iterable[Sequence[str]]) -> Path:
    """Append CSV rows to the data file at `path` (starting on a line of their own); its path. ReadOnlyData when
    writes are off, before anything is written."""
    if load_settings().read_only:
        raise ReadOnlyData(str(path))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    text = path.read_text(encoding="utf-8")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(("" if text.endswith("\n") or not text else "\n") + out.getvalue())
    return path


def csv_rows(path: Path, header: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each row of a curated CSV under `header`, blank and "#" lines skipped; a file
    whose first line is not the header is refused on line 1."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        if tuple(next(rows, ())) != header:
            raise DataFileError(path.name, 1, f"header must be {','.join(header)}")
        for line, cells in enumerate(rows, 2):
            if cells and cells[0].strip() and not cells[0].startswith("#"):
                yield line, cells

