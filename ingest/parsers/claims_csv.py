"""A user's published figures as CSV, one printed figure per row: every row stored as printed.

Header (order free; `#` lines are comments): `metric`, `value` and a source (`source_id` or `source_title`) make
the file a claims table; every other column is optional. A printed header is read through data/column_names.csv
(perfledger.headers): "#-GPUs" and "Number of chips" are n_devices, "GBS" global_batch, "System" the accelerator;
a header that means an audit quantity ("G-GBS", "G-Average Seq len") and any header nobody named stay under
their printed name as a configuration attribute of the row (JSON in `attributes`, part of its claim key). A column
that says something about one figure rather than the printed row (its values follow the metric within a printed
row, or data/column_names.csv calls it `figure`) goes to the row's note: it is never configuration.

Cells are read by perfledger.claim_cells (the vocabulary and the unit and precision grammar, after the user's
answers in data/resolutions.csv). A cell it cannot read yet is kept as printed (result.printed), marked
(result.unread) and counted by reason in ParseSummary.meta["unread"]; the row is stored all the same, under the
metric "printed" when its figure itself cannot be read. No row is refused for a label; only a file that is not a
table is (ParseError, one sentence). The source columns go to meta["sources"] (id -> title, url, date, kind).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import polars as pl

from ingest.parsers.base import LogParser
from perfledger.claim_cells import UNREAD_REASONS, Cells, Reading, read_cells
from perfledger.errors import ParseError
from perfledger.headers import CLAIM_COLUMNS, FIGURE, QUANTITIES, meaning
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps
from perfledger.resolutions import Answers, answers
from perfledger.vocabulary import LogFormat

INT_CONFIG = ("n_devices", "seq_len", "global_batch", "micro_batch", "grad_accum", "tp", "pp", "dp", "ep", "cp")
KNOWN = frozenset(CLAIM_COLUMNS)
READ_CELLS = ("metric", "value", "unit", "precision", "workload", "source_kind", "evidence")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80]


class ClaimsCsvParser(LogParser):
    format = LogFormat.CLAIMS_CSV
    max_problems_kept = None  # every problem listed: a claims file is small

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        for line in head.split("\n"):
            if line.strip() and not line.startswith("#"):
                names = {c.strip().lower() for c in line.split(",")}
                return "metric" in names and "value" in names and bool({"source_title", "source_id"} & names)
        return False

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.header: list[str] | None = None
        self.rows: list[tuple[int, dict[str, str]]] = []
        self.malformed: Counter[str] = Counter()

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        for offset, line in enumerate(lines):
            if not line.strip() or line.startswith("#"):
                continue
            lineno = first_lineno + offset
            try:
                cells = next(csv.reader([line.replace("\r", " ")]), [])
            except csv.Error as exc:
                self.malformed["not a CSV row"] += 1
                self.problem(lineno, f"not a CSV row ({exc}); the line was skipped")
                continue
            if self.header is None:
                self.header = header_names(cells)
                if not {"metric", "value"} <= set(self.header):
                    raise ParseError(self.file_name, lineno, "not a claims table: its header names no metric and "
                                                             "value columns")
                continue
            self.rows.append((lineno, self._row(cells)))
        return empty_steps()

    def _row(self, cells: list[str]) -> dict[str, str]:
        """The row by column name; cells past the header kept under "(column N)"."""
        assert self.header is not None
        names = self.header + [f"(column {i + 1})" for i in range(len(self.header), len(cells))]
        return {name: cell.strip() for name, cell in zip(names, cells, strict=False)}

    def finish(self) -> ParseSummary:
        if self.header is None:
            raise ParseError(self.file_name, None, "not a claims table: the file has no header row")
        given = answers()
        per_figure = figure_columns(self.header, [row for _, row in self.rows])
        sources: dict[str, dict[str, str]] = {}
        results, unread = [], Counter[str]()
        for lineno, row in self.rows:
            record, reading = claim_record(row, per_figure, given, self.file_name)
            results.append(record)
            unread.update(UNREAD_REASONS[f] for f in reading.unread)
            unread.update(f"{name} not a whole number" for name in INT_CONFIG if _not_whole(row.get(name, "")))
            assert record.source_id is not None
            sources.setdefault(record.source_id, _source_info(row, record.source_id, reading))
        if not results:
            raise ParseError(self.file_name, None, "not a claims table: no row under its header")
        return ParseSummary(
            format=self.format,
            config=RunConfig(),
            problems=tuple(self.problems),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta={"sources": sources, "refused": dict(self.malformed), "unread": dict(unread),
                  "lines": [lineno for lineno, _ in self.rows]},
        )


def header_names(cells: list[str]) -> list[str]:
    """Each printed header as the column it means (data/column_names.csv), else as printed; a later header of a
    column already named keeps its printed name, a repeated printed name gets " (2)"."""
    names: list[str] = []
    for cell in (c.strip() for c in cells):
        means = cell.lower() if cell.lower() in KNOWN else meaning(cell)
        name = means if means is not None and means in KNOWN else cell
        if name in names:
            name = cell if cell not in names else f"{cell} ({names.count(cell) + 1})"
        names.append(name)
    return names


def figure_columns(header: list[str], rows: list[dict[str, str]]) -> frozenset[str]:
    """The further columns that describe one printed figure, not its printed row: named `figure` in
    data/column_names.csv, or whose value, within the figures of one printed row (source, locator), changes with
    the metric and only with it (a "printed header" column: "TFLOPs/sec/chip" beside "Tokens/sec/chip")."""
    extras = [h for h in header if h not in KNOWN]
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for i, row in enumerate(rows):
        key = (row.get("source_id") or row.get("source_title", ""), row.get("locator") or f"row {i}")
        groups[key].append(row)
    found = {h for h in extras if meaning(h) == FIGURE}
    for name in extras:
        varies = any(len({r.get(name, "") for r in g}) > 1 for g in groups.values())
        by_metric = all(len({r.get(name, "") for r in g if r.get("metric") == m}) == 1
                        for g in groups.values() for m in {r.get("metric") for r in g})
        if varies and by_metric:
            found.add(name)
    return frozenset(found)


def claim_record(row: dict[str, str], per_figure: frozenset[str], given: Answers,
                 file_name: str) -> tuple[ResultRecord, Reading]:
    """One row as a result record, every cell kept: what the vocabulary reads in its columns, the rest as printed."""
    extras = {k: v for k, v in row.items() if k not in KNOWN and k and v}
    signs = tuple((q, h, v) for h, v in extras.items() if (q := meaning(h)) in QUANTITIES)
    cells = Cells(**{name: row.get(name, "") for name in READ_CELLS}, signs=signs)
    reading = read_cells(cells, given)
    config = {k: v for k, v in extras.items() if k not in per_figure}
    config |= {f"{name} (as printed)": row[name] for name in INT_CONFIG if _not_whole(row.get(name, ""))}
    notes = [row.get("note", ""), printed_metric(row.get("metric", ""), reading.metric),
             *reading.notes, *(f"{k}: {v}" for k, v in extras.items() if k in per_figure)]
    source_id = row.get("source_id") or _slug(row.get("source_title", "")) or _slug(file_name)
    ints = {name: _int(row.get(name, "")) for name in INT_CONFIG}
    for header, cell in config.items():  # "Parallelism: TP=32 DP=32 PP=1": each part its column, where it has none
        filled = {name: number for name, number in compound_cell(cell).items() if ints[name] is None}
        if filled:
            ints |= filled
            notes.append(", ".join(f"{n} {v}" for n, v in filled.items()) + f" read from {header}: {cell}")
    record = ResultRecord(
        metric=reading.metric, value=reading.value, unit=reading.unit, source_id=source_id,
        accelerator_as_printed=row.get("accelerator") or None, model_as_printed=row.get("model") or None,
        framework=row.get("framework") or None, framework_version=row.get("framework_version") or None,
        precision=reading.precision, workload=reading.workload, evidence=reading.evidence,
        strategy=row.get("strategy") or None, locator=row.get("locator") or None,
        note="; ".join(n for n in notes if n) or None, baseline=row.get("baseline") or None,
        sparsity=_float(row.get("sparsity", "")), precision_as_printed=row.get("precision") or None,
        attributes=json.dumps(config, sort_keys=True, ensure_ascii=False) if config else None,
        printed=cells.as_json(), unread=reading.unread_json(),
        n_devices=ints["n_devices"], seq_len=ints["seq_len"], global_batch=ints["global_batch"],
        micro_batch=ints["micro_batch"], grad_accum=ints["grad_accum"], tp=ints["tp"], pp=ints["pp"], dp=ints["dp"],
        ep=ints["ep"], cp=ints["cp"])
    return record, reading


_PART = re.compile(r"\s*([A-Za-z#][A-Za-z#_ -]*?)\s*[=:]\s*(\d[\d,]*)\s*[,;/]?")


def compound_cell(cell: str) -> dict[str, int]:
    """The whole-number columns one cell prints as NAME=N parts ("TP=32 DP=32 PP=1" -> tp, dp, pp), each name read
    through data/column_names.csv ("VP=5" names none: left in the cell as printed); {} unless the whole cell is
    such parts."""
    parts = list(_PART.finditer(cell))
    if not parts or "".join(p.group(0) for p in parts).strip() != cell.strip():
        return {}
    found = [(meaning(p.group(1)) or "", _int(p.group(2))) for p in parts]
    return {name: number for name, number in found if name in INT_CONFIG and number is not None}


def _source_info(row: dict[str, str], source_id: str, reading: Reading) -> dict[str, str]:
    return {"title": row.get("source_title") or source_id, "url": row.get("source_url", ""),
            "date": row.get("source_date", ""), "kind": reading.source_kind or ""}


def _int(text: str) -> int | None:
    """A whole number as printed ("1,536"); None for an empty cell or one that is not a whole number."""
    try:
        value = float(text.replace(",", "").strip())
    except ValueError:
        return None
    return int(value) if value.is_integer() and abs(value) < 2**63 else None


def _not_whole(text: str) -> bool:
    """A printed cell of a whole-number column that is not one ("256 (32 nodes)"): kept as printed, counted."""
    return bool(text.strip()) and _int(text) is None


def _float(text: str) -> float | None:
    try:
        return float(text.replace(",", "")) if text.strip() else None
    except ValueError:
        return None


PARSER = ClaimsCsvParser


def printed_metric(text: str, metric: str) -> str:
    """The metric name as printed, kept in the note when it says more than the metric's own name ("Time to train 1T
    tokens in days": the audit reads its token count there); "" when it is the metric's own name.

    >>> printed_metric("Time to train 1T tokens in days", "time_to_train_s"), printed_metric("mfu", "mfu")
    ('metric as printed: Time to train 1T tokens in days', '')
    """
    same = "".join(c for c in text.lower() if c.isalnum()) == "".join(c for c in metric if c.isalnum())
    return "" if same or not text.strip() else f"metric as printed: {text}"

