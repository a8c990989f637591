"""The names a file logs per step that the key vocabulary does not know, with an example value of each: what the
upload form offers to map (perfledger.metric_keys) when a metrics file or console log reads in part or not at all.

Read from the file's first MiB the way its readers would: the keys of its JSON records, the header of a CSV / TSV
file, or the `name: value` pairs of its console lines."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ingest.parsers._common import load_json
from ingest.parsers._record_text import csv_fields
from ingest.parsers.key_value_log import is_record, line_pairs
from ingest.parsers.metrics_file import DELIMITERS
from ingest.text import clean_text, decode
from perfledger.metric_keys import Vocabulary, load_vocabulary

HEAD_BYTES = 1024 * 1024
MAX_NAMES = 60
MAX_LINES = 2_000
MIN_PAIRS = 4


@dataclass(frozen=True, slots=True)
class LoggedName:
    name: str
    example: str  # the first value logged under it, as printed


def unknown_names(raw: bytes, vocabulary: Vocabulary | None = None) -> list[LoggedName]:
    """The names the vocabulary does not know, in the order the file first logs them (at most MAX_NAMES)."""
    vocabulary = vocabulary or load_vocabulary()
    known = vocabulary.is_known
    lines = [line.strip() for line in clean_text(decode(raw[:HEAD_BYTES])).split("\n")]
    lines = [line for line in itertools.islice(lines, MAX_LINES) if line]
    found: dict[str, str] = {}
    for name, value in _logged(lines, vocabulary):
        if name and not known(name) and name not in found and len(found) < MAX_NAMES:
            found[name] = value[:40]
    return [LoggedName(name, example) for name, example in found.items()]


def _logged(lines: list[str], vocabulary: Vocabulary) -> list[tuple[str, str]]:
    if not lines:
        return []
    records = [obj for line in lines if line.startswith("{") and isinstance(obj := _object(line), dict)]
    if records:
        return [(str(k), str(v)) for obj in records for k, v in obj.items() if not isinstance(v, dict | list)]
    for delimiter in DELIMITERS:
        header = csv_fields(lines[0], delimiter) or []
        row = csv_fields(lines[1], delimiter) if len(lines) > 1 else None
        if len(header) >= 2 and row is not None and len(row) == len(header):
            return list(zip(header, row, strict=True))
    console = [pairs for line in lines if len(pairs := line_pairs(line)) >= 2]
    steps = [pairs for pairs in console if is_record(pairs, vocabulary)]  # the lines read as steps, when any are
    chosen = steps or [pairs for pairs in console if len(pairs) >= MIN_PAIRS]  # else a step's report, not a banner
    return [pair for pairs in chosen for pair in pairs.items() if pair[0] != "line_time"]


def _object(line: str) -> object:
    try:
        return load_json(line)
    except ValueError:
        return None
