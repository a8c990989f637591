"""A user's answers for the cells the vocabulary could not read: data/resolutions.csv (field, printed, means, note)
in the data folder (PERFLEDGER_DATA_DIR, else data/), read at every claims import and checked row by row.

One row answers every cell printed alike ("TFLOPs per wafer" on every row of every file): `python -m perfledger
resolve set unit "TFLOPs per wafer" "TFLOP/s/device"` writes it and re-reads the stored rows that print it.

    field        means
    metric       a metric (tokens_per_s_per_device, step_time_s ...)
    unit         a unit perfledger reads ("TFLOP/s/device", "ms/step", "%")
    precision    a precision (bf16, fp8 ...)
    workload     a workload (pretrain, sft, rlhf ...)
    source_kind  a source kind (docs, vendor, paper ...)
    evidence     an evidence level (reported, measured ...)
    model        a catalog model id          accelerator  a catalog accelerator id
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from perfledger.data_files import csv_rows
from perfledger.errors import DataFileError, InvalidInput
from perfledger.settings import data_dir as settings_data_dir
from perfledger.vocabulary import Evidence, Metric, Precision, SourceKind, Workload, unit_factor

FILE_NAME = "resolutions.csv"
HEADER = ("field", "printed", "means", "note")
FIELDS = ("metric", "unit", "precision", "workload", "source_kind", "evidence", "model", "accelerator")
_CHOICES: dict[str, tuple[str, ...]] = {
    "metric": tuple(m.value for m in Metric), "precision": tuple(p.value for p in Precision),
    "workload": tuple(w.value for w in Workload), "source_kind": tuple(k.value for k in SourceKind),
    "evidence": tuple(e.value for e in Evidence),
}


def cell_key(printed: str) -> str:
    """How a printed cell is matched: case and runs of spaces aside ("TFLOPs  per Wafer" = "tflops per wafer")."""
    return " ".join(printed.casefold().split())


@dataclass(frozen=True, slots=True)
class Answers:
    """The answers by (field, printed cell key)."""

    by_cell: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def get(self, field_name: str, printed: str | None) -> str | None:
        return self.by_cell.get((field_name, cell_key(printed or ""))) if printed else None


def why_not(field_name: str, means: str) -> str | None:
    """Why an answer cannot stand (one sentence), or None when it can."""
    if field_name not in FIELDS:
        return f"field {field_name!r} is not one of {', '.join(FIELDS)}"
    if not means.strip():
        return "the answer is empty"
    if field_name in _CHOICES and means not in _CHOICES[field_name]:
        return f"{field_name} {means!r} is not one of {', '.join(_CHOICES[field_name])}"
    if field_name == "unit" and not any(unit_factor(m, means) is not None for m in Metric):
        return f"unit {means!r} is not one perfledger reads (try TFLOP/s/device, tokens/s/device, ms/step, %)"
    return None


def read_resolutions(path: Path) -> Answers:
    """The answers in a resolutions file (none when it does not exist); a bad row raises DataFileError naming it."""
    if not path.exists():
        return Answers()
    out: dict[tuple[str, str], str] = {}
    for line, cells in csv_rows(path, HEADER):
        if len(cells) != len(HEADER) or not cells[1].strip():
            raise DataFileError(path.name, line, f"expected {','.join(HEADER)} with a printed cell")
        if (why := why_not(cells[0], cells[2])) is not None:
            raise DataFileError(path.name, line, why)
        out[(cells[0], cell_key(cells[1]))] = cells[2].strip()
    return Answers(out)


def resolutions_path(data_dir: Path | None = None) -> Path:
    """The resolutions file of the data folder (PERFLEDGER_DATA_DIR, else data/)."""
    return (data_dir or settings_data_dir()) / FILE_NAME


def answers(data_dir: Path | None = None) -> Answers:
    """The data folder's answers, read now (a claims import reads them once per file)."""
    return read_resolutions(resolutions_path(data_dir))


def save_answer(field_name: str, printed: str, means: str, note: str = "", *, path: Path | None = None) -> bool:
    """Write one answer (replacing the row for the same field and cell), keeping every other row as it was; True
    when a row was replaced. An answer that cannot stand is refused (InvalidInput) and nothing is written."""
    if (why := why_not(field_name, means)) is not None:
        raise InvalidInput(why)
    target = path or resolutions_path()
    read_resolutions(target)  # a file that is already bad is said before it is written to
    rows: list[list[str]] = []
    if target.exists():
        with target.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))[1:]
    kept = [r for r in rows if not (len(r) == len(HEADER) and r[0] == field_name and cell_key(r[1]) == cell_key(printed))]
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerows([HEADER, *kept, (field_name, printed.strip(), means.strip(), note)])
    return len(kept) < len(rows)
