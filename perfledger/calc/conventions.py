"""The FLOPs and peak conventions publishers use, tried in turn when a claim does not follow from the default.

Each convention turns the default count (flops.DEFAULT_FORMULA per token, MFU against the dense peak of the
stated precision) into a publisher's: a different per-token formula, the input embedding counted, LoRA without
the frozen weights' gradients, or MFU against the BF16 peak for an FP8 run. `reproducing` names the first one
that brings the recomputed figure within tolerance of the claim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from perfledger.calc import flops as fl

LORA_FACTOR = fl.LORA_FACTOR
DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Convention:
    """A way to count: FLOPs per token for (shape, seq) and the precision whose peak divides (None: stated)."""

    name: str
    title: str
    flops: Callable[[fl.ModelShape, int], float]
    peak_precision: str | None = None


def _embeddings_counted(shape: fl.ModelShape, seq: int) -> float:
    return fl.flops_per_token(shape, seq) + 6 * shape.hidden * shape.vocab


def _lora(shape: fl.ModelShape, seq: int) -> float:
    return fl.flops_per_token(shape, seq) * LORA_FACTOR


def conventions(precision: str | None) -> Iterator[Convention]:
    """The default first, then every alternative that applies to a claim at `precision`."""
    yield Convention(DEFAULT, fl.FORMULA_TITLES[fl.DEFAULT_FORMULA], fl.FORMULAS[fl.DEFAULT_FORMULA])
    for name, fn in fl.FORMULAS.items():
        if name != fl.DEFAULT_FORMULA:
            yield Convention(name, fl.FORMULA_TITLES.get(name, name), fn)
    yield Convention("embeddings", "default with the input embedding counted (+6hV)", _embeddings_counted)
    yield Convention("lora", "LoRA: no gradients for frozen weights (4/6 of full)", _lora)
    if precision == "fp8":
        for name, fn in fl.FORMULAS.items():
            yield Convention(f"{name}+bf16-peak", f"{fl.FORMULA_TITLES.get(name, name)}, MFU against the BF16 "
                                                  "peak of an FP8 run", fn, "bf16")
