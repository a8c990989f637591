"""What NeMo's two outputs share (stdout `DLL` lines and DLLogger `DLLL {json}` files): the step record's keys,
the `cfg/...` parameter names, and keeping only steps past every step already read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ingest.parsers._common import to_int

Number = Callable[[Any], float | None]  # to_float for printed text, json_number for JSON values


def cfg_int(params: Mapping[str, Any], key: str) -> int | None:
    """The integer parameter `cfg/<key>` of a PARAMETER record; None when absent or not an integer."""
    return to_int(params.get(f"cfg/{key}"))


def step_row(step: int, values: Mapping[str, Any], number: Number, *, gbs: int | None,
             seq: int | None) -> dict[str, Any]:
    """One step's row from a DLL record's values (`train_step_timing in s`, `reduced_train_loss`, `lr`, ...)."""
    return {
        "step": step,
        "step_time_s": number(values.get("train_step_timing in s")),
        "samples": gbs,
        "tokens": gbs * seq if gbs and seq else None,
        "loss": number(values.get("reduced_train_loss")),
        "lr": number(values.get("lr")),
        "grad_norm": number(values.get("grad_norm")),
    }


def model_shape(params: Mapping[str, Any]) -> dict[str, int | None]:
    """The model's shape as RunConfig fields, from the `cfg/...` parameters."""
    heads = cfg_int(params, "num_attention_heads")
    return {
        "num_layers": cfg_int(params, "num_layers"),
        "hidden_size": cfg_int(params, "hidden_size"),
        "ffn_hidden_size": cfg_int(params, "ffn_hidden_size"),
        "num_attention_heads": heads,
        "num_kv_heads": cfg_int(params, "num_query_groups") or heads,
    }


class IncreasingSteps:
    """Keeps a step only when it is past every step kept so far: ranks and progress frames repeat steps."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.kept = 0
        self.repeats = 0

    def take(self, step: int) -> bool:
        if self.last is not None and step <= self.last:
            self.repeats += 1
            return False
        self.last = step
        self.kept += 1
        return True
