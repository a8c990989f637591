"""What a run and a published row state about their configuration, and where the two differ: pure functions over
mappings shaped as result rows (model_id, accelerator_id, n_devices, precision, ... as perfledger.schema.result).

Besides the columns, a row states what its note or its attributes carry ("precision as printed: FP8-CS",
"parallelism as printed: TP=1;PP=1;CP=1;VP=1;EP=1;GA=8", a claims file's "Activation checkpointing"): those are
read as further fields (`stated`), so a precision recipe or a virtual-pipeline size either side states is compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# (field, label) in the order a reader looks for them; the columns of a result row, then stated attributes
FIELDS = (("n_devices", "devices"), ("global_batch", "global batch"), ("micro_batch", "micro batch"),
          ("grad_accum", "gradient accumulation"), ("tp", "TP"), ("pp", "PP"), ("dp", "DP"), ("cp", "CP"),
          ("ep", "EP"), ("vp", "VP"), ("seq_len", "sequence length"), ("precision", "precision"),
          ("precision_recipe", "precision recipe"), ("framework", "framework"),
          ("framework_version", "framework and container version"), ("strategy", "strategy"),
          ("recompute", "activation recomputation"))
LABELS = dict(FIELDS)
# What two rows must share to be one setup; a run and a published row are compared only on these
SETUP = (("model_id", "model"), ("accelerator_id", "accelerator"), ("precision", "precision"),
         ("workload", "workload"))
_PRINTED = re.compile(r"([A-Za-z][A-Za-z ]*?) as printed: ([^|]+)")
_PAIR = re.compile(r"([A-Za-z]+)\s*=\s*([^;,\s]+)")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
# keys of "parallelism as printed" read as fields the columns lack (the others are columns already)
_PARALLEL_EXTRA = {"VP": "vp", "FSDP": "fsdp"}
_RECOMPUTE_WORDS = ("recompute", "recomputation", "activation checkpointing", "activations checkpoint")
UNSTATED = (None, "", "unstated")


@dataclass(frozen=True, slots=True)
class FieldDifference:
    """One configuration field in which the run and the published row differ (None: that side does not state it)."""

    field: str
    run: Any
    published: Any

    @property
    def label(self) -> str:
        return LABELS.get(self.field, self.field)

    def describe(self) -> str:
        """"devices 16 vs 8", "precision recipe unstated vs FP8-CS"."""
        return f"{self.label} {_text(self.run)} vs {_text(self.published)}"

    def as_json(self) -> dict[str, Any]:
        return {"field": self.field, "label": self.label, "run": self.run, "published": self.published}


def _text(value: Any) -> str:
    return "unstated" if value in UNSTATED else f"{value:,}" if isinstance(value, int) else str(value)


def stated(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's configuration: its columns (FIELDS and SETUP), then what its note, precision_as_printed and
    attributes state (precision recipe, VP, activation recomputation ...), keys as in FIELDS where they are.

    >>> s = stated({"n_devices": 8, "note": "parallelism as printed: TP=1;VP=2 | precision as printed: FP8-CS"})
    >>> (s["n_devices"], s["vp"], s["precision_recipe"])
    (8, '2', 'FP8-CS')
    """
    out: dict[str, Any] = {k: row.get(k) for k, _ in (*FIELDS, *SETUP) if row.get(k) not in UNSTATED}
    for name, value in _PRINTED.findall(str(row.get("note") or "")):
        _read_printed(out, name.strip().lower(), value.strip())
    if row.get("precision_as_printed"):
        out["precision_recipe"] = str(row["precision_as_printed"])
    for name, value in _attributes(row.get("attributes")).items():
        out[_attribute_key(name)] = value
    if "grad_accum" not in out and (accumulated := grad_accum_of(out)) is not None:
        out["grad_accum"] = accumulated
    return out


def grad_accum_of(fields: Mapping[str, Any]) -> int | None:
    """The gradient accumulation a row's global batch, micro batch and DP state together (Megatron's
    global = micro x DP x accumulation), where all three are stated and divide exactly; else None.

    >>> grad_accum_of({"global_batch": 128, "micro_batch": 2, "dp": 8}), grad_accum_of({"global_batch": 128})
    (8, None)
    """
    try:
        gbs, mbs, dp = (int(fields[k]) for k in ("global_batch", "micro_batch", "dp"))
    except (KeyError, TypeError, ValueError):
        return None
    if gbs <= 0 or mbs <= 0 or dp <= 0 or gbs % (mbs * dp):
        return None
    return gbs // (mbs * dp)


def _read_printed(out: dict[str, Any], name: str, value: str) -> None:
    if name == "precision":
        out.setdefault("precision_recipe", value)
    elif name == "parallelism":
        for key, v in _PAIR.findall(value):
            if key.upper() in _PARALLEL_EXTRA:
                out.setdefault(_PARALLEL_EXTRA[key.upper()], v)


def _attributes(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        found = json.loads(str(text))
    except ValueError:
        return {}
    return {str(k): v for k, v in found.items() if v not in UNSTATED} if isinstance(found, dict) else {}


def _attribute_key(name: str) -> str:
    lowered = name.strip().lower()
    return "recompute" if any(w in lowered for w in _RECOMPUTE_WORDS) else lowered


def differences(run: Mapping[str, Any], published: Mapping[str, Any]) -> tuple[FieldDifference, ...]:
    """Every configuration field either side states in which they differ: FIELDS in order, then any other
    stated field; a field stated on one side only is a difference (the other side None).

    >>> [d.describe() for d in differences({"n_devices": 16, "tp": 1}, {"n_devices": 8, "tp": 1, "vp": "1"})]
    ['devices 16 vs 8', 'VP unstated vs 1']
    """
    mine, theirs = stated(run), stated(published)
    setup = {k for k, _ in SETUP}
    ordered = [k for k, _ in FIELDS] + sorted((set(mine) | set(theirs)) - set(LABELS) - setup)
    return tuple(FieldDifference(k, mine.get(k), theirs.get(k)) for k in ordered
                 if (k in mine or k in theirs) and not same_value(mine.get(k), theirs.get(k)))


def same_value(a: Any, b: Any) -> bool:
    """Whether two stated values are the same (as text, case and spacing aside; 8 and "8" are)."""
    if a in UNSTATED or b in UNSTATED:
        return a in UNSTATED and b in UNSTATED
    return " ".join(str(a).lower().split()) == " ".join(str(b).lower().split())


def setup_differences(first: Mapping[str, Any], second: Mapping[str, Any],
                      fields: Iterable[tuple[str, str]] = SETUP, *, both_unstated_same: bool = False) -> list[str]:
    """The setup fields (model, accelerator, precision, workload, by default) in which two rows differ, in words:
    "model qwen2.5-32b vs llama3-8b"; a field unstated on either side differs (on both sides too, unless
    `both_unstated_same`: two runs of one log format that neither states it)."""
    out = []
    for key, label in fields:
        a, b = first.get(key), second.get(key)
        if both_unstated_same and a in UNSTATED and b in UNSTATED:
            continue
        if a in UNSTATED or b in UNSTATED or not same_value(a, b):
            out.append(f"{label} {_text(a)} vs {_text(b)}")
    return out


def version_key(text: Any) -> tuple[int, ...] | None:
    """The release a framework version names, as numbers: "NeMo container 25.11" -> (25, 11); None when none.

    >>> version_key("NeMo 25.02 container"), version_key("0.2.2"), version_key("nemo")
    ((25, 2), (0, 2, 2), None)
    """
    found = _VERSION.search(str(text or ""))
    return tuple(int(g) for g in found.groups() if g is not None) if found else None


def version_distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """How far apart two releases are, major first: (25, 4) and (25, 2) are 2 apart, (25, 11) and (26, 1) 90."""
    width = max(len(a), len(b))
    pa, pb = (a + (0,) * width)[:width], (b + (0,) * width)[:width]
    return float(sum(abs(x - y) * 100 ** (width - i - 1) for i, (x, y) in enumerate(zip(pa, pb, strict=True))))


def same_family(run_framework: Any, row_framework: Any) -> bool:
    """Whether a published row comes from the run's framework family: the run's framework name appears in the
    row's ("nemo" in "NeMo (Megatron-Bridge)")."""
    mine = str(run_framework or "").strip().lower()
    return bool(mine) and mine in str(row_framework or "").lower()
