"""The key vocabulary: how the names frameworks log per step map onto the ledger's step columns, and in what unit.

It is data, `metric_keys.csv` in the data folder (PERFLEDGER_DATA_DIR, else data/), one row per key spelling:

    framework,key,column,unit,requires,identifies,note,origin

- `key` is the name as logged (a JSON key, a CSV header, a TensorBoard tag); `*` in it matches any text
  (`lr-*/group0`). Rows come in order of preference: where several keys of one column are present in a record,
  the first row's wins.
- Matching is scoped. A row of a named framework applies only to a file of that framework (named by a key that
  identifies it, or by the reader); a row of `*` applies to any file. For one spelling, a row the user added
  (`origin` = user, written by `keys add`) comes first, then the file's framework's own row, then the generic row,
  so a key that two frameworks log with different meanings (torchtitan's `tps` per device, NeMo Automodel's `tps`
  over all devices) is never read with the other's.
- `column` is one of COLUMNS (a step column, or a quantity a step column is derived from); `-` marks a key that is
  known (it identifies a framework) but not read.
- `unit` is one of UNITS, for the column's kind; the value is converted to the ledger's unit on reading.
- `requires` names another key that must be present in the same file for the row to apply (Megatron's `throughput`
  is TFLOP/s per GPU only beside `iteration-time`).
- `identifies` = yes: the key is one only `framework` logs, so the run's framework is read from it.
- A name no row spells is read from its words where they settle its meaning (perfledger.key_grammar:
  `examples_per_second` is samples/s, `loss/train` a loss), after every row.

`python -m perfledger keys add` appends a row after checking it; a file a framework writes then reads without new
code. The structured-metrics reader (ingest/parsers/_records.py) and the TensorBoard reader use this module.
"""

from __future__ import annotations

import csv
import fnmatch
import functools
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfledger.data_files import append_rows
from perfledger.errors import DataFileError
from perfledger.settings import data_dir as settings_data_dir

FILE_NAME = "metric_keys.csv"
HEADER = ("framework", "key", "column", "unit", "requires", "identifies", "note", "origin")
LEGACY_HEADER = HEADER[:-1]  # a file of rows written before `origin`: read as bundled rows
USER = "user"  # the origin of a row `keys add` wrote
MAX_KEY_CHARS = 255  # the TensorBoard walk matches tags of at most this many bytes

# column -> what it holds (for the docs and `keys list`), and the unit kind it takes
COLUMNS: dict[str, tuple[str, str]] = {
    "step": ("the optimizer step (iteration) the record belongs to", "count"),
    "step_time_s": ("seconds per step", "time"),
    "elapsed_s": ("time since the run started (a cumulative clock)", "duration"),
    "interval_s": ("time since the previous record (over the steps between them)", "duration"),
    "wall_time": ("the time of day the record was written", "timestamp"),
    "tokens": ("tokens in this step over all devices", "count"),
    "samples": ("samples (sequences) in this step over all devices: the global batch in force", "count"),
    "tokens_per_device": ("tokens in this step on one device", "count"),
    "tokens_total": ("tokens so far (a cumulative counter)", "count"),
    "samples_total": ("samples so far (a cumulative counter)", "count"),
    "tokens_per_s": ("tokens per second over all devices", "rate"),
    "samples_per_s": ("samples per second over all devices", "rate"),
    "loss": ("training loss", "number"),
    "lr": ("learning rate", "number"),
    "grad_norm": ("gradient norm", "number"),
    "reported_tokens_per_s_per_device": ("the log's own tokens/s per device", "rate"),
    "reported_tflops_per_device": ("the log's own TFLOP/s per device", "flops"),
    "reported_mfu": ("the log's own MFU", "fraction"),
    "memory_gb": ("peak device memory", "memory"),
    "micro_batch": ("samples per device per micro-step (a run setting)", "count"),
    "summary": ("present only in an end-of-run record, which is then not a step", "any"),
    "eval": ("present only in an evaluation record, which is then not a step", "any"),
    "-": ("known, not read (identifies a framework)", "any"),
}

# unit -> (kind, factor to the ledger's unit). "1/s" is a rate whose reciprocal is seconds per step; the text
# units (duration, n/total, epoch_s, epoch_ms, iso) are parsed, not scaled.
UNITS: dict[str, tuple[str, float]] = {
    "": ("number", 1.0), "count": ("count", 1.0), "count/s": ("rate", 1.0),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6), "min": ("time", 60.0), "h": ("time", 3600.0),
    "1/s": ("time", 1.0), "duration": ("time", 1.0), "n/total": ("count", 1.0),
    "epoch_s": ("timestamp", 1.0), "epoch_ms": ("timestamp", 1e-3), "iso": ("timestamp", 1.0),
    "TFLOP/s": ("flops", 1.0), "GFLOP/s": ("flops", 1e-3), "FLOP/s": ("flops", 1e-12),
    "fraction": ("fraction", 1.0), "%": ("fraction", 0.01),
    "GB": ("memory", 1.0), "GiB": ("memory", 1.073741824), "MB": ("memory", 1e-3), "MiB": ("memory", 0.001048576),
    "bytes": ("memory", 1e-9),
}
# which unit kinds each column kind accepts
_ACCEPTS: dict[str, frozenset[str]] = {
    "count": frozenset({"count"}), "time": frozenset({"time"}), "duration": frozenset({"time"}),
    "timestamp": frozenset({"timestamp"}), "rate": frozenset({"rate"}), "number": frozenset({"number"}),
    "flops": frozenset({"flops"}), "fraction": frozenset({"fraction"}), "memory": frozenset({"memory"}),
    "any": frozenset(kind for kind, _ in UNITS.values()),
}
TEXT_UNITS = frozenset({"duration", "n/total", "iso"})
STEP_COLUMNS = ("step_time_s", "tokens", "samples", "loss", "lr", "grad_norm", "reported_tflops_per_device",
                "reported_mfu", "reported_tokens_per_s_per_device", "memory_gb")  # read straight into a step


@dataclass(frozen=True, slots=True)
class KeyRow:
    framework: str
    key: str
    column: str
    unit: str
    requires: str = ""
    identifies: bool = False
    note: str = ""
    origin: str = ""  # USER: added by `keys add`, before any bundled row

    @property
    def is_pattern(self) -> bool:
        return "*" in self.key

    @property
    def factor(self) -> float:
        return UNITS[self.unit][1]

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.key) if self.is_pattern else name == self.key

    def as_csv_row(self) -> list[str]:
        return [self.framework, self.key, self.column, self.unit, self.requires,
                "yes" if self.identifies else "", self.note, self.origin]


@dataclass(frozen=True, slots=True)
class KeyMapping:
    """The rows that apply to one file: each present key's row, by column in order of preference."""

    by_column: Mapping[str, tuple[tuple[str, KeyRow], ...]]
    framework: str | None
    frameworks: tuple[str, ...] = ()  # every framework whose rows applied, the first being `framework`

    def keys_of(self, column: str) -> tuple[tuple[str, KeyRow], ...]:
        return self.by_column.get(column, ())


@dataclass(frozen=True, eq=False)
class Vocabulary:
    rows: tuple[KeyRow, ...]

    @functools.cached_property
    def _exact(self) -> dict[str, tuple[KeyRow, ...]]:
        out: dict[str, list[KeyRow]] = {}
        for row in self.rows:
            if not row.is_pattern:
                out.setdefault(row.key, []).append(row)
        return {k: tuple(v) for k, v in out.items()}

    @functools.cached_property
    def _patterns(self) -> tuple[KeyRow, ...]:
        return tuple(row for row in self.rows if row.is_pattern)

    @functools.cached_property
    def _folded(self) -> dict[str, tuple[KeyRow, ...]]:
        out: dict[str, list[KeyRow]] = {}
        for key, rows in self._exact.items():
            out.setdefault(key.casefold(), []).extend(rows)
        return {k: tuple(v) for k, v in out.items()}

    def rows_for(self, name: str) -> tuple[KeyRow, ...]:
        """Every row naming `name` (several when `requires` tells them apart), exact spellings before patterns; a
        name no row spells exactly is looked for case aside ("Loss" as "loss", "TFLOPs" as "tflops")."""
        exact = self._exact.get(name) or self._folded.get(name.casefold(), ())
        found = exact + tuple(row for row in self._patterns if row.matches(name))
        return found or self._by_grammar(name)

    @staticmethod
    def _by_grammar(name: str) -> tuple[KeyRow, ...]:
        """The row a name no row spells reads as from its words (perfledger.key_grammar), if any."""
        from perfledger.key_grammar import row_by_grammar  # key_grammar builds KeyRow of this module: a cycle

        row = row_by_grammar(name)
        return (row,) if row is not None else ()

    @functools.cached_property
    def _required(self) -> frozenset[str]:
        return frozenset(row.requires for row in self.rows if row.requires)

    def is_known(self, name: str) -> bool:
        """Whether a reader keeps this name: a key of a row, or the key another row requires beside it."""
        return name in self._exact or name in self._required or name.casefold() in self._folded \
            or any(row.matches(name) for row in self._patterns) or bool(self._by_grammar(name))

    def exact_rows(self, columns: Iterable[str]) -> tuple[KeyRow, ...]:
        """The rows with a literal key for these columns (what a reader that matches bytes can look for)."""
        wanted = set(columns)
        return tuple(row for row in self.rows if not row.is_pattern and row.column in wanted)

    def frameworks_of(self, names: Iterable[str]) -> list[str]:
        """The frameworks the present names identify, in the vocabulary's order."""
        present = set(names)
        found: dict[str, None] = {}
        for row in self.rows:
            if row.identifies and row.framework != "*" and row.framework not in found \
                    and (not row.requires or row.requires in present) \
                    and (row.key in present if not row.is_pattern else any(row.matches(n) for n in present)):
                found[row.framework] = None
        return list(found)

    def mapping(self, names: Iterable[str], frameworks: Sequence[str] = ()) -> KeyMapping:
        """Which of these present names feeds which column, each column's keys in order of preference: the user's
        rows, then the rows of the file's frameworks (`frameworks`, the reader's, then those the names identify,
        in that order: a W&B export of a Composer run is both), then the generic rows."""
        present = set(names)
        scope = tuple(dict.fromkeys((*frameworks, *self.frameworks_of(present))))
        order = {id(row): i for i, row in enumerate(self.rows)}

        def rank(row: KeyRow) -> tuple[bool, int, int]:
            where = scope.index(row.framework) if row.framework in scope else len(scope)
            return row.origin != USER, where, order.get(id(row), len(order))  # a row read by grammar: last

        chosen: dict[str, list[tuple[tuple[bool, int, int], str, KeyRow]]] = {}
        for name in present:
            fitting = [r for r in self.rows_for(name)
                       if (r.framework == "*" or r.framework in scope) and (not r.requires or r.requires in present)]
            if fitting:
                row = min(fitting, key=rank)
                chosen.setdefault(row.column, []).append((rank(row), name, row))
        by_column = {c: tuple((name, row) for _, name, row in sorted(v, key=lambda t: t[0])) for c, v in
                     chosen.items()}
        return KeyMapping(by_column=by_column, framework=scope[0] if scope else None, frameworks=scope)


def vocabulary_path(data_dir: Path | None = None) -> Path:
    return (data_dir or settings_data_dir()) / FILE_NAME


def load_vocabulary(data_dir: Path | None = None) -> Vocabulary:
    """The vocabulary in the data folder, checked row by row; read again only when the file changes."""
    path = vocabulary_path(data_dir)
    try:
        stat = path.stat()
    except OSError as exc:
        raise DataFileError(str(path), None, f"the key vocabulary cannot be read ({exc.strerror})") from None
    return _load(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int, size: int) -> Vocabulary:
    return Vocabulary(tuple(parse_rows(path.read_text(encoding="utf-8"), str(path))))


def parse_rows(text: str, file_name: str) -> list[KeyRow]:
    """The rows of a vocabulary file; DataFileError naming the first line at fault."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    names = tuple(h.strip() for h in header) if header is not None else ()
    if names not in (HEADER, LEGACY_HEADER):
        raise DataFileError(file_name, 1, f"the header must be {','.join(HEADER)}")
    rows = []
    for lineno, fields in enumerate(reader, start=2):
        if not any(f.strip() for f in fields):
            continue
        if len(fields) == len(LEGACY_HEADER) < len(names):  # a row appended before `origin`: a bundled row
            fields = [*fields, ""]
        if len(fields) != len(names):
            raise DataFileError(file_name, lineno, f"{len(fields)} fields where the header has {len(names)}")
        rows.append(check_row(dict(zip(names, (f.strip() for f in fields), strict=True)), file_name, lineno))
    return rows


def check_row(fields: Mapping[str, str], file_name: str, lineno: int | None) -> KeyRow:
    """One row, or DataFileError saying what is wrong with it and what would be right."""
    def bad(reason: str) -> DataFileError:
        return DataFileError(file_name, lineno, reason)

    key, column, unit = fields.get("key", ""), fields.get("column", ""), fields.get("unit", "")
    if not key or len(key.encode()) > MAX_KEY_CHARS:
        raise bad(f"key must be 1 to {MAX_KEY_CHARS} bytes")
    if column not in COLUMNS:
        raise bad(f"column {column!r} is not one of: {', '.join(COLUMNS)}")
    if unit not in UNITS:
        raise bad(f"unit {unit!r} is not one of: {', '.join(repr(u) for u in UNITS)}")
    kind = COLUMNS[column][1]
    if UNITS[unit][0] not in _ACCEPTS[kind]:
        fitting = [repr(u) for u, (k, _) in UNITS.items() if k in _ACCEPTS[kind]]
        raise bad(f"unit {unit!r} does not fit column {column} (its units: {', '.join(fitting)})")
    identifies = fields.get("identifies", "").lower()
    if identifies not in ("", "yes", "no"):
        raise bad("identifies must be yes, no or empty")
    framework = fields.get("framework", "") or "*"
    if identifies == "yes" and framework == "*":
        raise bad("a key that identifies a framework must name it (framework is *)")
    origin = fields.get("origin", "")
    if origin not in ("", USER):
        raise bad(f"origin must be empty (bundled) or {USER}")
    return KeyRow(framework=framework, key=key, column=column, unit=unit, requires=fields.get("requires", ""),
                  identifies=identifies == "yes", note=fields.get("note", ""), origin=origin)


def add_rows(rows: Sequence[KeyRow], data_dir: Path | None = None) -> Path:
    """Append rows to the vocabulary file as the user's (origin user: they come before the bundled rows), after
    checking the file still reads; returns its path. A row whose framework, key and requires the user already
    added is refused (a bundled row of the same spelling is overridden, not refused)."""
    path = vocabulary_path(data_dir)
    existing = load_vocabulary(data_dir).rows
    seen = {(r.framework, r.key, r.requires) for r in existing if r.origin == USER}
    rows = [replace(row, origin=USER) for row in rows]
    for row in rows:
        if (row.framework, row.key, row.requires) in seen:
            raise DataFileError(str(path), None, f"key {row.key!r} of framework {row.framework} is already there")
    return append_rows(path, (row.as_csv_row() for row in rows))
