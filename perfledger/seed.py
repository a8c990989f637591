"""Read the curated CSVs under data/ into typed rows, checking them line by line.

Each file's header must be exactly its table's columns (perfledger.schema; results.csv omits id, row_key and
run_id). Values come back typed by the column type: Integer -> int, Float -> float, Boolean -> bool, text ->
str; an empty cell is None. A malformed file raises DataFileError(file, line, reason), the line counted as an
editor shows it (the header is line 1). A result row whose accelerator or model names no catalog id is kept,
with the id None, and listed in `Seed.unresolved`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, Float, Integer, Table

from perfledger import schema
from perfledger.catalog.colour import colour_problem
from perfledger.catalog.link import is_absent
from perfledger.catalog.record import Catalog
from perfledger.catalog.resolve import resolve_noted
from perfledger.errors import DataFileError, UnknownId
from perfledger.records import LATE_RESULT_FIELDS, ResultRecord
from perfledger.vocabulary import Evidence, Metric, Precision, SourceKind

SOURCES_FILE = "sources.csv"
ACCELERATORS_FILE = "accelerators.csv"
MODELS_FILE = "models.csv"
RESULTS_FILE = "results.csv"
RESULT_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in schema.result.columns if c.name not in ("id", "row_key", "run_id", *LATE_RESULT_FIELDS)
)

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A results.csv row whose accelerator or model names no catalog id; it was loaded with the id None."""

    file: str
    line: int
    name: str
    kind: str  # "accelerator" | "model"
    nearest: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Seed:
    sources: tuple[Row, ...]
    accelerators: tuple[Row, ...]
    models: tuple[Row, ...]
    results: tuple[ResultRecord, ...]
    unresolved: tuple[Unresolved, ...] = ()


def load_seed(data_dir: Path) -> Seed:
    """All four CSVs under `data_dir`, typed and cross-checked (ids referenced by results exist)."""
    sources = tuple(_read_table(data_dir / SOURCES_FILE, schema.source, _check_source))
    source_ids = frozenset(s["id"] for s in sources)
    accelerators = tuple(_read_table(data_dir / ACCELERATORS_FILE, schema.accelerator,
                                     _check_accelerator(_check_reference(source_ids))))
    models = tuple(_read_table(data_dir / MODELS_FILE, schema.model, _check_reference(source_ids)))
    known = _Known(source_ids, frozenset(a["id"] for a in accelerators), frozenset(m["id"] for m in models),
                   Catalog.from_rows(models, accelerators))
    results, unresolved = _read_results(data_dir / RESULTS_FILE, known)
    return Seed(sources, accelerators, models, results, unresolved)


def read_catalog_rows(data_dir: Path) -> tuple[tuple[Row, ...], tuple[Row, ...]]:
    """(models, accelerators) of models.csv and accelerators.csv under `data_dir`, typed, sources unchecked."""
    models = tuple(_read_table(data_dir / MODELS_FILE, schema.model, lambda _row: None))
    accelerators = tuple(_read_table(data_dir / ACCELERATORS_FILE, schema.accelerator,
                                     _check_accelerator(lambda _row: None)))
    return models, accelerators


@dataclass(frozen=True, slots=True)
class _Known:
    sources: frozenset[str]
    accelerators: frozenset[str]
    models: frozenset[str]
    catalog: Catalog


def _read_table(path: Path, table: Table, check: Callable[[Row], str | None]) -> Iterator[Row]:
    columns = tuple(c.name for c in table.columns)
    for line, raw in _rows(path, columns):
        row = _typed(path, line, raw, table)
        if (problem := check(row)) is not None:
            raise DataFileError(path.name, line, problem)
        yield row


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    if not path.is_file():
        raise DataFileError(path.name, None, f"missing file {path}")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = tuple(next(reader, ()))
        if header != columns:
            raise DataFileError(path.name, 1, f"header must be {','.join(columns)}; got {','.join(header)}")
        for cells in reader:
            line = reader.line_num  # the physical line where this record ends
            if len(cells) != len(columns):
                raise DataFileError(path.name, line, f"expected {len(columns)} cells, got {len(cells)}")
            yield line, dict(zip(columns, cells, strict=True))


def _typed(path: Path, line: int, raw: dict[str, str], table: Table) -> Row:
    row: Row = {}
    for column in (c for c in table.columns if c.name in raw):
        text = raw[column.name]
        try:
            row[column.name] = _convert(text, column.type)
        except ValueError:
            raise DataFileError(
                path.name, line, f"column {column.name}: {text!r} is not a valid {_type_name(column.type)}"
            ) from None
        if row[column.name] is None and not column.nullable and not column.primary_key:
            raise DataFileError(path.name, line, f"column {column.name} must not be empty")
    return row


def typed_cells(raw: Mapping[str, str], table: Table, file_name: str = "", line: int = 0) -> Row:
    """The cells of `raw` typed by their columns in `table`; raises DataFileError naming the bad cell."""
    return _typed(Path(file_name), line, dict(raw), table)


def _convert(text: str, column_type: Any) -> Any:
    if text.strip() == "":
        return None
    if isinstance(column_type, Boolean):
        return _to_bool(text)
    if isinstance(column_type, Integer):
        return int(text)
    if isinstance(column_type, Float):
        return float(text)
    return text


def _to_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(text)


def _type_name(column_type: Any) -> str:
    if isinstance(column_type, Boolean):
        return "boolean (true/false)"
    if isinstance(column_type, Integer):
        return "integer"
    if isinstance(column_type, Float):
        return "number"
    return "text"


def _check_source(row: Row) -> str | None:
    if row["kind"] not in {k.value for k in SourceKind}:
        return f"unknown source kind {row['kind']!r}"
    return None


def _check_reference(source_ids: frozenset[str]) -> Callable[[Row], str | None]:
    def check(row: Row) -> str | None:
        if row.get("source_id") is not None and row["source_id"] not in source_ids:
            return f"unknown source_id {row['source_id']!r}"
        return None

    return check


def _check_accelerator(check: Callable[[Row], str | None]) -> Callable[[Row], str | None]:
    """`check`, then the accelerator's own cells (its chart colour)."""
    return lambda row: check(row) or colour_problem(row.get("colour"))


def _read_results(path: Path, known: _Known) -> tuple[tuple[ResultRecord, ...], tuple[Unresolved, ...]]:
    records: list[ResultRecord] = []
    unresolved: list[Unresolved] = []
    for line, raw in _rows(path, RESULT_COLUMNS):
        row = _typed(path, line, raw, _RESULT_TABLE)
        if (problem := _result_problem(row, known)) is not None:
            raise DataFileError(path.name, line, problem)
        acc_id, acc_missing = _resolved_id(row, "accelerator", known, path.name, line)
        model_id, model_missing = _resolved_id(row, "model", known, path.name, line)
        unresolved += [u for u in (acc_missing, model_missing) if u is not None]
        records.append(_record({**row, "accelerator_id": acc_id, "model_id": model_id}))
    return tuple(records), tuple(unresolved)


def _result_problem(row: Row, known: _Known) -> str | None:
    try:
        metric = Metric(row["metric"])
    except ValueError:
        return f"unknown metric {row['metric']!r}"
    checks = (
        (row["unit"] != metric.unit, f"unit of {metric.value} must be {metric.unit!r}, got {row['unit']!r}"),
        (row["source_id"] is not None and row["source_id"] not in known.sources,
         f"unknown source_id {row['source_id']!r}"),
        (row["evidence"] not in {e.value for e in Evidence}, f"unknown evidence {row['evidence']!r}"),
        (row["precision"] is not None and row["precision"] not in {p.value for p in Precision},
         f"unknown precision {row['precision']!r}"),
    )
    return next((reason for failed, reason in checks if failed), None)


def _resolved_id(
    row: Row, kind: str, known: _Known, file_name: str, line: int
) -> tuple[str | None, Unresolved | None]:
    """The row's catalog id: the id column if it names a known id, else its printed name resolved."""
    given, printed = row[f"{kind}_id"], row[f"{kind}_as_printed"]
    name = given if given is not None else printed
    if is_absent(name):
        return None, None
    if name in known.catalog.rows(kind):
        return name, None
    try:
        return resolve_noted(kind, name, known.catalog)[0], None
    except UnknownId as exc:
        return None, Unresolved(file_name, line, name, kind, exc.nearest)


_RECORD_FIELDS = frozenset(f.name for f in fields(ResultRecord))
_RESULT_TABLE = schema.result


def _record(row: Row) -> ResultRecord:
    return ResultRecord(**{k: v for k, v in row.items() if k in _RECORD_FIELDS})
