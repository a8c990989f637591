"""What the record-stream reader (ingest/parsers/metrics_file.py) reads a record's text with: a file's first lines,
CSV fields, JSON objects (nested ones flattened), a W&B chart export's header, the line prefix a framework row
removes (data/frameworks.csv), and a JSON value as the text a column holds."""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from ingest.parsers._common import load_json
from perfledger.frameworks import load_frameworks
from perfledger.vocabulary import LogFormat

GRAMMAR = LogFormat.METRICS.value
_CHART_STEP, _CHART_SEPARATOR, _CHART_SUFFIXES = "Step", " - ", ("__MIN", "__MAX")  # a W&B chart's CSV export
_DOCUMENT_KEY = re.compile(r'"([^"\n]{1,255})"\s*:')
MAX_COLUMNS_DOCUMENT_CHARS = 64 * 2**20  # a whole-document JSON is parsed at once: larger ones are refused


def first_lines(text: str, count: int) -> Iterator[str]:
    """The first `count` lines that are not blank, stripped (a stray line may stand before a file's own)."""
    lines = (line.lstrip("\ufeff").strip() for line in text.split("\n"))
    return itertools.islice((line for line in lines if line), count)


def first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.lstrip("\ufeff").strip()
    return ""


def csv_fields(line: str, delimiter: str = ",") -> list[str] | None:
    """One CSV line's fields; None when the csv module refuses it (a stray carriage return, a huge field)."""
    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:
        return None


def json_object(line: str) -> dict[str, Any] | None:
    if not line.startswith("{") or not line.endswith("}"):
        return None
    try:
        obj = load_json(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def document_names(head: str) -> list[str]:
    """The names a JSON document's head holds: of per-step arrays ({"lm loss": [..], "time info": [..]}) or of
    records nested in it ({"train_info": {"metrics": [{"step": 250, "train loss": ...}, ...]}})."""
    return _DOCUMENT_KEY.findall(head) if head.lstrip().startswith("{") else []


def chart_names(names: list[str]) -> tuple[list[str], list[str]]:
    """A W&B chart export's header (`"Step","<run> - train/loss","<run> - train/loss__MIN",...`) -> the names to
    read each column as (the first run's `<run> - key` as `key`, its Step as `_step`, the other runs' columns and
    the __MIN/__MAX bands not read) and the runs; any other header as it is."""
    if not names or names[0] != _CHART_STEP or not any(_CHART_SEPARATOR in n for n in names[1:]):
        return names, []
    runs: list[str] = []
    keys = ["_step"]
    for name in names[1:]:
        run, _, key = name.rpartition(_CHART_SEPARATOR)
        if run and run not in runs:
            runs.append(run)
        keys.append(key if run and run == runs[0] and not key.endswith(_CHART_SUFFIXES) else "")
    return keys, runs


def prefixes_of(lines: list[str]) -> tuple[list[str], tuple[re.Pattern[str], ...]]:
    """The frameworks the lines' frameworks rows recognise, and the line prefixes their rows remove."""
    frameworks = load_frameworks()
    found = frameworks.recognised(lines, GRAMMAR)
    return found, tuple(row.line_prefix for f in found for row in frameworks.of(f)
                        if row.grammar == GRAMMAR and row.line_prefix is not None)


def unprefixed(line: str, prefixes: tuple[re.Pattern[str], ...]) -> str:
    for prefix in prefixes:
        if (m := prefix.match(line)) is not None:
            return line[m.end():]
    return line


def record_lists(value: Any, known: Callable[[str], bool], depth: int = 0) -> Iterator[list[dict[str, Any]]]:
    """Every list of objects nested in a JSON value whose first object has a name the vocabulary knows."""
    if depth > 8:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from record_lists(item, known, depth + 1)
    elif isinstance(value, list) and value and isinstance(value[0], dict) and any(known(k) for k in value[0]):
        yield [r for r in value if isinstance(r, dict)]


def flat(obj: dict[str, Any]) -> dict[str, Any]:
    """A record with the names of the objects nested in it read as its own (DLLogger's `data`), its own first."""
    out = {k: v for k, v in obj.items() if not isinstance(v, dict)}
    for value in obj.values():
        if isinstance(value, dict):
            for name, inner in value.items():
                out.setdefault(name, inner)
    return out


def flat_names(obj: dict[str, Any]) -> list[str]:
    return list(flat(obj))


def record_text(value: Any) -> str | None:
    """A JSON value as the text a column holds (numbers exactly, NaN kept); None for what is not a scalar."""
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return repr(value)
    return str(value)
