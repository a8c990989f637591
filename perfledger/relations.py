"""Relations among the quantities a printed row prints, as data: data/relations.csv, read once and checked row by
row. A relation recomputes one metric of the row from others ("tokens_per_s_per_device = global_batch * seq_len /
step_time_s / n_devices"); a publisher's own formula is a row too, with its source, holding for that publisher's
pages. Formulas are products and quotients of quantity names and numbers, parsed here (never evaluated as code).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from perfledger.data_files import csv_rows
from perfledger.errors import DataFileError
from perfledger.headers import QUANTITIES
from perfledger.vocabulary import Metric, Workload

RELATIONS_FILE = Path(__file__).resolve().parents[1] / "data" / "relations.csv"
HEADER = ("id", "checks", "formula", "tolerance", "workloads", "applies_to", "source", "note")
COLUMNS = ("global_batch", "seq_len", "n_devices", "micro_batch", "grad_accum", "tp", "pp", "cp", "dp",
           "ep")  # result columns a formula may name
RATES = ("step_time_s", "tokens_per_s_per_device", "tokens_per_s", "samples_per_s")  # figures of the printed row
# Configuration cells a relation may check (GBS = MBS x DP x GA); a cell the row does not print is derived by the
# same relation where the row prints its inputs (DP = devices / (TP x PP x CP)), and named derived wherever used.
CELLS = ("global_batch", "dp", "n_devices")
NAMES = frozenset((*COLUMNS, *QUANTITIES, *RATES))
UNSTATED = "-"  # in `workloads`: a row that states no workload


@dataclass(frozen=True, slots=True)
class Relation:
    """One relation: the metric it checks, its formula as numerator and denominator terms, its tolerance (None:
    the audit's own), the workloads it holds for, the sources it applies to ("*" every one), where it comes from."""

    id: str
    checks: str
    numerator: tuple[str | float, ...]
    denominator: tuple[str | float, ...]
    tolerance: float | None
    workloads: frozenset[str]
    applies_to: tuple[str, ...]
    source: str
    note: str = ""

    @property
    def generic(self) -> bool:
        return self.applies_to == ("*",)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(t for t in (*self.numerator, *self.denominator) if isinstance(t, str))

    def formula(self) -> str:
        """ "tokens_per_s_per_device = global_batch x seq_len / (step_time_s x n_devices)" """
        top = " x ".join(map(_shown, self.numerator))
        bottom = " x ".join(map(_shown, self.denominator))
        below = f" / ({bottom})" if len(self.denominator) > 1 else f" / {bottom}" if bottom else ""
        return f"{self.checks} = {top}{below}"

    def holds_for(self, workload: str | None, source_text: str) -> bool:
        """Whether the relation holds for a row of this workload whose source reads `source_text` (id, title, URL)."""
        if "*" not in self.workloads and (workload or UNSTATED) not in self.workloads:
            return False
        return self.generic or any(a.lower() in source_text.lower() for a in self.applies_to)

    def value(self, quantities: Mapping[str, float]) -> float | None:
        """The formula over the row's quantities; None when one is missing or the denominator is zero."""
        def product(terms: tuple[str | float, ...]) -> float | None:
            values = [t if isinstance(t, float) else quantities.get(t) for t in terms]
            return math.prod(v for v in values if v is not None) if None not in values else None

        top, bottom = product(self.numerator), product(self.denominator)
        return top / bottom if top is not None and bottom else None


def _shown(term: str | float) -> str:
    return f"{term:g}" if isinstance(term, float) else term


_TERM = re.compile(r"\s*([*/()])\s*|\s*([A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:e-?\d+)?)\s*")


def parse_formula(text: str) -> tuple[tuple[str | float, ...], tuple[str | float, ...]]:
    """A formula's numerator and denominator terms: "a * b / (c * d) / e" -> (a, b), (c, d, e). Raises ValueError
    on anything else (a sum, a function, an unknown name)."""
    top: list[str | float] = []
    bottom: list[str | float] = []
    dividing = grouped = False
    pos = 0
    while pos < len(text):
        match = _TERM.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"cannot read {text[pos:]!r}")
        pos = match.end()
        op, term = match.group(1), match.group(2)
        if op == "/":
            dividing = True
        elif op == "(" and dividing:
            grouped = True
        elif op == ")" and grouped:
            grouped = dividing = False
        elif op == "*":
            continue
        elif term is not None:
            value: str | float = float(term) if term[0].isdigit() else term
            if isinstance(value, str) and value not in NAMES:
                raise ValueError(f"{value!r} is not a quantity ({', '.join(sorted(NAMES))})")
            (bottom if dividing else top).append(value)
            dividing = grouped
        else:
            raise ValueError(f"unexpected {op!r}")
    if not top:
        raise ValueError("no numerator")
    return tuple(top), tuple(bottom)


def read_relations(path: Path) -> tuple[Relation, ...]:
    """The relations of a relations file; a bad row raises DataFileError naming its line."""
    out: list[Relation] = []
    for line, cells in csv_rows(path, HEADER):
        try:
            out.append(_relation(cells))
        except ValueError as exc:
            raise DataFileError(path.name, line, str(exc)) from None
    return tuple(out)


def _relation(cells: list[str]) -> Relation:
    if len(cells) != len(HEADER):
        raise ValueError(f"expected {len(HEADER)} cells ({','.join(HEADER)})")
    ident, checks, formula, tolerance, workloads, applies_to, source, note = (c.strip() for c in cells)
    if checks not in CELLS and (checks not in RATES or checks not in {m.value for m in Metric}):
        raise ValueError(f"checks {checks!r} is not a figure or cell a relation recomputes "
                         f"({', '.join((*RATES, *CELLS))})")
    known = {w.value for w in Workload} | {"*", UNSTATED}
    if not set(workloads.split()) <= known or not workloads.split():
        raise ValueError(f"workloads {workloads!r}: give '*', or among {', '.join(sorted(known))}")
    numerator, denominator = parse_formula(formula)
    share = float(tolerance) if tolerance else None
    if share is not None and not 0 <= share < 1:
        raise ValueError(f"tolerance {tolerance!r} is not a fraction in [0, 1)")
    if not source:
        raise ValueError("a relation names its source")
    targets = tuple(a.strip() for a in applies_to.split("|") if a.strip()) or ("*",)
    return Relation(ident, checks, numerator, denominator, share, frozenset(workloads.split()), targets, source, note)


@functools.cache
def relations() -> tuple[Relation, ...]:
    """The bundled relations, read once per process."""
    return read_relations(RELATIONS_FILE)
