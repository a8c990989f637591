"""Checking the rows of a catalog file (`catalog add FILE.csv`) one by one, with one sentence per refusal.

The file has the columns of data/models.csv or data/accelerators.csv (any subset that includes `id`); which
table it fills is read from its header. A row whose id the catalog holds updates that row (given cells replace
stored ones, aliases are added to the stored ones); a new id adds a row. Checks: ids are lowercase slugs and
appear once; cells have their column's type; a new row has its table's required columns; a model's parameter
count agrees with its shape within PARAMS_TOLERANCE (else its note must explain the difference); counts, sizes
and peaks are positive and a peak never grows with the width of its precision; an accelerator's colour is #rrggbb; no alias names
another id.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table

from perfledger import schema
from perfledger.calc.shape_detail import parse_detail
from perfledger.catalog.colour import colour_problem
from perfledger.catalog.names import exact_key, normalize_name
from perfledger.catalog.record import Alias, Catalog, format_aliases, parse_aliases
from perfledger.errors import DataFileError, InvalidInput

Row = dict[str, Any]
PARAMS_TOLERANCE = 0.05
_SLUG = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
TABLES: dict[str, Table] = {"model": schema.model, "accelerator": schema.accelerator}
# Peaks from the widest precision to the narrowest: a narrower one is never slower.
PEAKS = ("fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops")
_POSITIVE = {
    "model": ("params", "active_params", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
              "moe_experts", "moe_top_k", "seq_len", "head_dim"),
    "accelerator": ("memory_gb", "mem_bw_tbps", *PEAKS, "tdp_w", "devices_per_package"),
}


@dataclass(frozen=True, slots=True)
class RowVerdict:
    """What one line of the file does: "add", "update" or "refused" (with the reason), and remarks."""

    line: int
    id: str | None
    action: str
    reason: str | None = None
    remarks: tuple[str, ...] = ()
    row: Row | None = None  # the whole row to store (stored cells merged with the given ones)


@dataclass(frozen=True, slots=True)
class CatalogFile:
    kind: str  # "model" | "accelerator"
    columns: tuple[str, ...]
    verdicts: tuple[RowVerdict, ...]

    @property
    def refused(self) -> tuple[RowVerdict, ...]:
        return tuple(v for v in self.verdicts if v.action == "refused")

    @property
    def accepted(self) -> tuple[RowVerdict, ...]:
        return tuple(v for v in self.verdicts if v.action != "refused")


def detect_kind(header: Sequence[str]) -> str:
    """"model" or "accelerator": the one table whose columns include every header column (`id` among them)."""
    if "id" not in header:
        raise InvalidInput("a catalog file needs an id column")
    fits = [kind for kind, table in TABLES.items() if set(header) <= {c.name for c in table.columns}]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        unknown = sorted(set(header) - {c.name for t in TABLES.values() for c in t.columns})
        raise InvalidInput(f"columns {', '.join(unknown) or ', '.join(header)} are neither data/models.csv's nor "
                           "data/accelerators.csv's")
    raise InvalidInput("the header fits both data/models.csv and data/accelerators.csv; add a column only one has "
                       "(e.g. family or vendor)")


def read_catalog_file(path: Path, catalog: Catalog, source_ids: frozenset[str]) -> CatalogFile:
    """Every row of `path` checked against `catalog` (and the rows above it); raises InvalidInput for a file that
    cannot be read as a catalog file at all."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = tuple(h.strip() for h in next(reader, ()))
            kind = detect_kind(header)
            lines = [(reader.line_num, cells) for cells in reader if any(c.strip() for c in cells)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InvalidInput(f"{path}: cannot read it as a CSV file ({exc})") from None
    return CatalogFile(kind, header, check_rows(kind, header, lines, catalog, source_ids))


def check_rows(kind: str, header: tuple[str, ...], lines: Sequence[tuple[int, list[str]]], catalog: Catalog,
               source_ids: frozenset[str]) -> tuple[RowVerdict, ...]:
    owners = _alias_owners(kind, catalog)
    seen: dict[str, int] = {}
    verdicts: list[RowVerdict] = []
    for line, cells in lines:
        verdict = _check_line(kind, header, line, cells, catalog, source_ids, owners, seen)
        if verdict.action != "refused" and verdict.id is not None and verdict.row is not None:
            seen[verdict.id] = line
            for alias in parse_aliases(verdict.row.get("aliases")):
                owners.setdefault(exact_key(alias.name), verdict.id)
        verdicts.append(verdict)
    return tuple(verdicts)


def _check_line(kind: str, header: tuple[str, ...], line: int, cells: list[str], catalog: Catalog,
                source_ids: frozenset[str], owners: Mapping[str, str], seen: Mapping[str, int]) -> RowVerdict:
    if len(cells) != len(header):
        return RowVerdict(line, None, "refused", f"expected {len(header)} cells, got {len(cells)}")
    raw = dict(zip(header, (c.strip() for c in cells), strict=True))
    row_id = raw["id"]
    if not _SLUG.match(row_id):
        return RowVerdict(line, row_id or None, "refused",
                          f"id {row_id!r} is not a lowercase slug (letters, digits, '.', '-', '_'; e.g. mpt-7b)")
    if row_id in seen:
        return RowVerdict(line, row_id, "refused", f"id {row_id} is already given on line {seen[row_id]}")
    try:
        given = _typed(raw, TABLES[kind])
    except ValueError as exc:
        return RowVerdict(line, row_id, "refused", str(exc))
    stored = catalog.rows(kind).get(row_id)
    merged = _merged(stored, given)
    problem = (_missing_required(kind, merged) if stored is None else None) or _problem(kind, merged, source_ids)
    problem = problem or _alias_problem(row_id, given.get("aliases"), owners)
    if problem is not None:
        return RowVerdict(line, row_id, "refused", problem)
    remarks = _params_remarks(merged) if kind == "model" else ()
    if remarks and remarks[0].startswith("refused: "):
        return RowVerdict(line, row_id, "refused", remarks[0].removeprefix("refused: "))
    return RowVerdict(line, row_id, "add" if stored is None else "update", None, remarks, merged)


def _typed(raw: Mapping[str, str], table: Table) -> Row:
    from perfledger.seed import typed_cells  # the one reading of a CSV cell by its column's type

    try:
        return {k: v for k, v in typed_cells(raw, table).items() if v is not None}
    except DataFileError as exc:
        raise ValueError(exc.reason) from None


def _merged(stored: Mapping[str, Any] | None, given: Row) -> Row:
    row: Row = dict(stored or {})
    row.update({k: v for k, v in given.items() if k != "aliases"})
    aliases: list[Alias] = list(parse_aliases(row.get("aliases")))
    names = {normalize_name(a.name) for a in aliases}
    aliases += [a for a in parse_aliases(given.get("aliases")) if normalize_name(a.name) not in names]
    row["aliases"] = format_aliases(aliases)
    return row


def _missing_required(kind: str, row: Row) -> str | None:
    required = [c.name for c in TABLES[kind].columns if not c.nullable and not c.primary_key]
    missing = [c for c in required if row.get(c) is None]
    return f"a new {kind} needs {' and '.join(missing)}" if missing else None


def _problem(kind: str, row: Row, source_ids: frozenset[str]) -> str | None:
    for column in _POSITIVE[kind]:
        if row.get(column) is not None and not row[column] > 0:
            return f"{column} must be positive, got {row[column]}"
    if row.get("source_id") is not None and row["source_id"] not in source_ids:
        return f"unknown source_id {row['source_id']!r} (add the source first)"
    if kind == "accelerator":
        return colour_problem(row.get("colour")) or _peaks_problem(row)
    if row.get("ffn_kind") not in (None, "gelu", "swiglu"):
        return f"ffn_kind must be gelu or swiglu (or empty), got {row['ffn_kind']!r}"
    if row.get("heads") and row.get("kv_heads") and row["heads"] % row["kv_heads"]:
        return f"kv_heads {row['kv_heads']} does not divide heads {row['heads']}"
    if row.get("moe_top_k") and row.get("moe_experts") and row["moe_top_k"] > row["moe_experts"]:
        return f"moe_top_k {row['moe_top_k']} exceeds moe_experts {row['moe_experts']}"
    try:
        parse_detail(row.get("shape_detail"))
    except InvalidInput as exc:
        return str(exc)
    return None


def _peaks_problem(row: Row) -> str | None:
    given = [(c, float(row[c])) for c in PEAKS if row.get(c) is not None]
    for (wide, wide_peak), (narrow, narrow_peak) in itertools.pairwise(given):
        if wide_peak > narrow_peak and {wide, narrow} != {"fp16_tflops", "bf16_tflops"}:
            return (f"{wide} {wide_peak:g} exceeds {narrow} {narrow_peak:g}: a narrower precision's dense peak is "
                    "never lower (a 2:4-sparse headline in one column?)")
    return None


def _alias_owners(kind: str, catalog: Catalog) -> dict[str, str]:
    """Every id and alias of `kind`, as written (case and spaces aside) -> the id it names."""
    owners = {exact_key(i): i for i in catalog.names(kind).ids}
    for row_id, row in catalog.rows(kind).items():
        for alias in parse_aliases(row.get("aliases")):
            owners.setdefault(exact_key(alias.name), row_id)
    return owners


def _alias_problem(row_id: str, cell: str | None, owners: Mapping[str, str]) -> str | None:
    for alias in parse_aliases(cell):
        owner = owners.get(exact_key(alias.name))
        if owner is not None and owner != row_id:
            return f"alias {alias.name!r} already names {owner}"
    return None


def shape_params(row: Mapping[str, Any], *, tied: bool) -> float | None:
    """Parameters counted from a model's shape: L*(2h^2 + 2*h*h_kv + m*h*f*E) + V*h (x2 untied); None without it.

    >>> round(shape_params({"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn_hidden": 11008,
    ...                     "vocab": 32000, "ffn_kind": "swiglu"}, tied=False) / 1e9, 3)  # Llama 2 7B
    6.738
    """
    if any(not row.get(c) for c in ("layers", "hidden", "heads", "ffn_hidden", "vocab")):
        return None
    h, f, v = float(row["hidden"]), float(row["ffn_hidden"]), float(row["vocab"])
    head_dim = float(row.get("head_dim") or h / float(row["heads"]))
    attention = head_dim * float(row["heads"])  # query width: hidden unless head_dim says otherwise
    kv_hidden = head_dim * float(row.get("kv_heads") or row["heads"])
    mlp = (3 if row.get("ffn_kind") == "swiglu" else 2) * h * f * float(row.get("moe_experts") or 1)
    return float(row["layers"]) * (2 * h * attention + 2 * h * kv_hidden + mlp) + (1 if tied else 2) * v * h


def _params_remarks(row: Row) -> tuple[str, ...]:
    """() when params agree with the shape (or either is missing); a remark when the note explains a difference;
    ("refused: ...",) when it does not."""
    if not row.get("params"):
        return ()
    ties = (True, False) if row.get("tied_embeddings") is None else (bool(row["tied_embeddings"]),)
    counts = [c for t in ties if (c := shape_params(row, tied=t)) is not None]
    if not counts:
        return ()
    params = float(row["params"])
    count = min(counts, key=lambda c: abs(c / params - 1))
    off = count / params - 1
    if abs(off) <= PARAMS_TOLERANCE:
        return ()
    said = f"params {params:.4g} and the shape's count {count:.4g} differ by {off:+.1%}"
    if row.get("note"):
        return (f"{said}; kept, as the note explains",)
    why = f"{said} (more than {PARAMS_TOLERANCE:.0%}); fix params or the shape, or explain the difference in note"
    return (f"refused: {why}",)
