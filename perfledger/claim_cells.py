"""A claims row's printed cells read by the vocabulary, and what could not be read yet.

The claims import and the resolve queue read a row the same way (`read_cells`), so an answer given later re-reads
a stored row exactly as the next import of its file would. A cell the vocabulary cannot read is never a refusal:
it is kept as printed (`Cells`, stored as JSON in result.printed) and named in `Reading.unread` (field -> the cell),
counted by UNREAD_REASONS. A row whose figure cannot be read (metric, unit or value) is stored under the metric
PRINTED with the number as printed, if any: no audit or page reads it as a figure until it is resolved.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

from perfledger.quantities import parse_unit, unit_in_name, words
from perfledger.resolutions import Answers
from perfledger.vocabulary import (
    Evidence,
    Metric,
    Precision,
    SourceKind,
    Workload,
    read_evidence,
    read_metric,
    read_precision,
    unit_factor,
    unit_peak,
)

PRINTED = "printed"  # the metric of a row whose figure is kept as printed, unread
UNREAD_REASONS = {
    "metric": "metric not read", "unit": "unit not read", "value": "value not a number",
    "precision": "precision not read", "workload": "workload not read", "source_kind": "source kind not read",
    "evidence": "evidence not read",
}
RL_SIGNS = ("policy", "generation_batch", "training_batch")  # quantities only an RL post-training row prints


@dataclass(frozen=True, slots=True)
class Cells:
    """The cells of one claims row the vocabulary reads, exactly as printed; `signs` are the row's further cells
    that say what it trains ("Algorithm: GRPO", "On/Off policy: On policy") as (quantity, header, cell)."""

    metric: str = ""
    value: str = ""
    unit: str = ""
    precision: str = ""
    workload: str = ""
    source_kind: str = ""
    evidence: str = ""
    signs: tuple[tuple[str, str, str], ...] = ()

    def as_json(self) -> str:
        kept = {k: v for k, v in asdict(self).items() if v}
        return json.dumps(kept, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | None) -> Cells:
        found = json.loads(text or "{}")
        found["signs"] = tuple(tuple(s) for s in found.get("signs", ()))
        return cls(**{k: v for k, v in found.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class Reading:
    """What the vocabulary read: the figure in its metric's unit (or PRINTED), identity fields, notes, and each
    cell it could not read yet (field -> the cell as printed)."""

    metric: str
    value: float | None
    unit: str
    precision: str | None = None
    workload: str | None = None
    evidence: str = Evidence.REPORTED.value
    source_kind: str | None = None
    notes: tuple[str, ...] = ()
    unread: dict[str, str] = field(default_factory=dict)

    def unread_json(self) -> str | None:
        return json.dumps(self.unread, sort_keys=True, ensure_ascii=False) if self.unread else None


def printed_number(text: str) -> float | None:
    """A printed number ("2,425.75", "61.10%"), or None when the cell is not a finite number ("N/A").

    >>> printed_number("2,425.75"), printed_number("N/A")
    (2425.75, None)
    """
    try:
        value = float(text.strip().rstrip("%").replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_WITH_UNIT = re.compile(r"\s*([-+]?(?:\d[\d,]*)?\.?\d+(?:[eE][-+]?\d+)?)\s*([^\d\s(<].*?)\s*")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|min|s)\b")
_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "min": 60.0, "s": 1.0}


def number_with_unit(text: str) -> tuple[float, str] | None:
    """A number printed with its unit in the cell ("55,000 TPS" -> (55000, "TPS"), "0.8 s", a ratio "1.35x"), when
    the rest reads as a unit; a duration in parts ("7h 58m", its aside "(1.72x)" aside) in seconds. None for anything else."""
    head = re.split(r"<br\s*/?>|\(", text, maxsplit=1)[0].strip()
    parts = _DURATION.findall(head)
    if len(parts) > 1 and _DURATION.sub("", head).strip() == "":
        return sum(float(n) * _SECONDS[u] for n, u in parts), "s"
    found = _WITH_UNIT.fullmatch(head)
    if found is None or (number := printed_number(found.group(1))) is None:
        return None
    unit = "x" if found.group(2) in ("x", "X", "×") else found.group(2)  # a ratio: "1.35x", "1.35×"
    return (number, unit) if unit in ("%", "x") or parse_unit(unit) is not None else None


def read_cells(cells: Cells, answers: Answers) -> Reading:
    """Every cell read, answers first (data/resolutions.csv), then the vocabulary; nothing raises."""
    unread: dict[str, str] = {}
    notes: list[str] = []
    metric = _metric(cells.metric, answers)
    number = printed_number(cells.value)
    if number is not None or (with_unit := number_with_unit(cells.value)) is None:
        unit = answers.get("unit", _unit_text(cells)) or _unit_text(cells)
    else:  # the cell prints its own unit: it is the unit of this figure, whatever the header says
        number, unit = with_unit[0], answers.get("unit", with_unit[1]) or with_unit[1]
        notes.append(f"value as printed: {cells.value.strip()}")
    factor = unit_factor(metric, unit) if metric is not None else None
    if metric is None:
        unread["metric"] = cells.metric
    elif factor is None:
        unread["unit"] = unit
    if number is None:
        unread["value"] = cells.value
    if metric in (Metric.MFU, Metric.HFU) and (peak := unit_peak(unit)) is not None:
        notes.append(f"{metric.value} against the {peak.value} peak (unit as printed: {unit})")
    precision = _precision(cells.precision, answers, unread, notes)
    workload = _workload(cells, answers, unread, notes)
    evidence = _choice(cells.evidence, "evidence", answers, unread, Evidence) or Evidence.REPORTED.value
    kind = _choice(cells.source_kind, "source_kind", answers, unread, SourceKind)
    figure = metric is not None and factor is not None and number is not None
    return Reading(
        metric=metric.value if figure and metric is not None else PRINTED,
        value=number * factor if figure and number is not None and factor is not None else number,
        unit=metric.unit if figure and metric is not None else unit,
        precision=precision, workload=workload, evidence=evidence, source_kind=kind, notes=tuple(notes),
        unread=unread)


def _unit_text(cells: Cells) -> str:
    """The unit cell, else the unit the metric's name carries ("Total Step time(s)"), else a "%" on the value."""
    if cells.unit.strip():
        return cells.unit.strip()
    return unit_in_name(cells.metric) or ("%" if cells.value.strip().endswith("%") else "")


def _metric(text: str, answers: Answers) -> Metric | None:
    answer = answers.get("metric", text)
    return Metric(answer) if answer else read_metric(text)


def _precision(text: str, answers: Answers, unread: dict[str, str], notes: list[str]) -> str | None:
    if not text.strip():
        return None
    if (answer := answers.get("precision", text)) is not None:
        return Precision(answer).value
    reading = read_precision(text)
    if reading is None:
        unread["precision"] = text
        return None
    if reading.meaning:
        notes.append(f"precision as printed: {text} ({reading.meaning})")
    return reading.precision.value


def _word_of(kind: str, text: str) -> str | None:
    """The first word of `text` that the grammar's words of `kind` know ("GRPO" -> rlhf), or the text itself when
    it is one of the kind's own values."""
    table = words().of(kind)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in table:
            return table[word][0]
    return None


def _workload(cells: Cells, answers: Answers, unread: dict[str, str], notes: list[str]) -> str | None:
    """The workload cell, else what the row's further cells say: an algorithm ("GRPO"), or a policy or generation
    batch, which only RL post-training prints. Each reading from further cells is said in a note."""
    own = [w.value for w in Workload]
    printed = [("workload", "workload", cells.workload)] if cells.workload.strip() else []
    printed += [s for s in cells.signs if s[0] == "algorithm"]
    for _, header, text in printed:
        found = answers.get("workload", text) or (text.strip().lower() if text.strip().lower() in own else None) \
            or _word_of("workload", text)
        if found is not None:
            if header != "workload":
                notes.append(f"workload {found} read from its {header} {text!r}")
            return found
    rl = [f"{header} {text!r}" for quantity, header, text in cells.signs if quantity in RL_SIGNS]
    if rl:
        notes.append(f"workload rlhf read from its {', '.join(rl)} (only RL post-training prints them)")
        return Workload.RLHF.value
    if printed:
        unread["workload"] = printed[0][2]
    return None


def _choice(text: str, name: str, answers: Answers, unread: dict[str, str],
            kinds: type[Evidence | SourceKind]) -> str | None:
    """An evidence level or source kind: the answer, the value itself, a word for one; else unread (when printed)."""
    key = text.strip().lower()
    if not key:
        return None
    found = answers.get(name, text) or (key if key in {k.value for k in kinds} else None)
    if found is None and name == "source_kind":
        found = _word_of("source_kind", text)
    if found is None and name == "evidence" and (read := read_evidence(text)) is not None:
        found = read.value
    if found is None:
        unread[name] = text
    return found

