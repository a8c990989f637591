"""Corrections of a run's identity: which fields can be corrected by hand, how `FIELD=VALUE` reads, and the
provenance a correction leaves in the run's configuration.

A run's stored configuration carries `"identity": {field: {"from": "log" | "hint" | "default" | "user",
"where": "..."}}`; a correction writes `"from": "user"` with the correction's id, time and reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from perfledger.errors import InvalidInput

# field -> (kind, label); counts are whole and positive, names are resolved against the catalog by the caller
EDITABLE: dict[str, tuple[type, str]] = {
    "model": (str, "model"), "accelerator": (str, "accelerator"), "n_devices": (int, "devices"),
    "precision": (str, "precision"), "seq_len": (int, "sequence length"), "global_batch": (int, "global batch"),
    "micro_batch": (int, "micro batch"),
}
ALIASES = {"devices": "n_devices", "gpus": "n_devices", "seq": "seq_len", "sequence_length": "seq_len",
           "gbs": "global_batch", "batch": "global_batch", "mbs": "micro_batch"}
USER = "user"


@dataclass(frozen=True, slots=True)
class Change:
    """One corrected field: its value before (None: not stated) and after."""

    field: str
    before: Any
    after: Any


def field_name(text: str) -> str:
    """The RunConfig field a typed name means ("devices" -> "n_devices"); InvalidInput naming the choices."""
    name = text.strip().lower().replace("-", "_")
    name = ALIASES.get(name, name)
    if name not in EDITABLE:
        raise InvalidInput(f"{text!r} is not a field a correction sets; choose from {', '.join(EDITABLE)}")
    return name


def parse(assignments: Sequence[str]) -> dict[str, Any]:
    """`FIELD=VALUE` items -> {field: value}, counts as whole positive numbers.

    >>> parse(["devices=16", "model=qwen2.5-32b"])
    {'n_devices': 16, 'model': 'qwen2.5-32b'}
    """
    if not assignments:
        raise InvalidInput("give at least one FIELD=VALUE to set")
    out: dict[str, Any] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InvalidInput(f"a correction is FIELD=VALUE, got {item!r}")
        name = field_name(key)
        out[name] = _typed(name, value.strip())
    return out


def _typed(name: str, value: str) -> Any:
    kind, label = EDITABLE[name]
    if kind is str:
        return value
    try:
        number = int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number, got {value!r}") from None
    if number <= 0:
        raise InvalidInput(f"{label} must be positive, got {number}")
    return number


def changes(before: Mapping[str, Any], after: Mapping[str, Any], fields: Sequence[str]) -> list[Change]:
    """The `fields` whose value differs between two configurations."""
    return [Change(f, before.get(f), after.get(f)) for f in fields if before.get(f) != after.get(f)]


def provenance(correction_id: int, at: datetime, reason: str | None) -> dict[str, str]:
    """An identity entry for a field a correction set."""
    why = f": {reason}" if reason else ""
    return {"from": USER, "where": f"correction {correction_id}, {at:%Y-%m-%d %H:%M} UTC{why}"}
