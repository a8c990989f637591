"""What a printed column header of a claims table means: data/column_names.csv (means, spelling), read once and
checked row by row, so "#-GPUs", "Number of chips" and "n_devices" are one column and "G-GBS" is the generation
batch. A user adds a publisher's spelling with one line.

Three kinds of meaning:
- a claims column (CLAIM_COLUMNS: n_devices, global_batch, model ...): the import reads the cell as that column;
- an audit quantity (QUANTITIES: generation_batch, avg_seq_len ...): the cell keeps its printed header in the row's
  attributes, and the audit reads it as that quantity (`quantities_of`);
- FIGURE: the column says something about one printed figure (its printed header), so it is never configuration.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path

from perfledger.data_files import csv_rows
from perfledger.errors import DataFileError
from perfledger.quantities import plain_header

COLUMN_NAMES_FILE = Path(__file__).resolve().parents[1] / "data" / "column_names.csv"
HEADER = ("means", "spelling")
CLAIM_COLUMNS = (
    "metric", "value", "unit", "model", "accelerator", "source_title", "source_id", "n_devices", "framework",
    "framework_version", "precision", "seq_len", "global_batch", "micro_batch", "strategy", "workload", "source_url",
    "source_date", "source_kind", "evidence", "locator", "note", "baseline", "grad_accum", "tp", "pp", "dp", "ep", "cp",
    "sparsity",
)
# Quantities a row's further columns may print, read by the audit (perfledger.calc.audit_relations) and the
# workload reading (an algorithm, a policy or a generation batch says a row is RL post-training).
QUANTITIES = ("generation_batch", "training_batch", "avg_seq_len", "max_seq_len", "algorithm", "policy", "n_nodes",
              "devices_per_node")
FIGURE = "figure"
MEANINGS = frozenset((*CLAIM_COLUMNS, *QUANTITIES, FIGURE))


def header_key(text: str) -> str:
    """Case, spaces and punctuation aside, "#" and "%" kept: "#-GPUs" -> "#gpus", "G-GBS" -> "ggbs"."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch in "#%")


def read_column_names(path: Path) -> dict[str, str]:
    """{header key: meaning} from a column names file; a bad row raises DataFileError naming its line."""
    out: dict[str, str] = {}
    for line, cells in csv_rows(path, HEADER):
        if len(cells) != len(HEADER) or cells[0] not in MEANINGS or not header_key(cells[1]):
            raise DataFileError(path.name, line, f"expected means,spelling with a meaning among "
                                                 f"{', '.join(sorted(MEANINGS))} and a spelling")
        out.setdefault(header_key(cells[1]), cells[0])
    return out


@functools.cache
def column_names() -> dict[str, str]:
    """The bundled column names, every claims column's and quantity's own name among them; read once."""
    own = {header_key(name): name for name in (*CLAIM_COLUMNS, *QUANTITIES)}
    return {**own, **read_column_names(COLUMN_NAMES_FILE)}


def meaning(header: str) -> str | None:
    """What a printed header means, or None for a column of the publisher's own (kept under its printed name).

    >>> meaning("#-GPUs"), meaning("G-Average Seq len"), meaning("Activation checkpointing")
    ('n_devices', 'avg_seq_len', None)
    """
    return column_names().get(header_key(header)) or column_names().get(header_key(plain_header(header)))


def quantities_of(attributes: str | Mapping[str, str] | None) -> dict[str, str]:
    """The audit quantities a row's attributes print ({quantity: cell as printed}); the first column of a meaning
    wins.

    >>> quantities_of('{"G-GBS": "512", "Dispatcher": "DeepEP"}')
    {'generation_batch': '512'}
    """
    cells = json.loads(attributes) if isinstance(attributes, str) else dict(attributes or {})
    out: dict[str, str] = {}
    for name, cell in cells.items():
        found = meaning(name)
        if found in QUANTITIES and found not in out and str(cell).strip():
            out[found] = str(cell)
    return out
