"""Training FLOPs per token, by named formula (see the README's "How the numbers are computed").

Notation: L layers, h hidden, a attention width = heads * head_dim (h when head_dim is not given),
h_kv = kv_heads * head_dim, f ffn hidden, V vocab, s sequence length,
k experts per token (MoE top-k), m MLP matrices (3 SwiGLU, 2 GELU), N parameters. Every formula counts
forward + backward (x3) of multiply-adds (x2) and no activation recompute: model FLOPs, not hardware FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from perfledger.calc.shape_detail import Detail, parse_detail
from perfledger.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class ModelShape:
    """The architecture numbers FLOPs need; built from a `model` row or a log's printed config."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    swiglu: bool
    moe_top_k: int = 1
    params: float | None = None  # total parameters, for the 6N family
    active_params: float | None = None  # MoE: parameters a token uses
    head_dim: int | None = None  # when heads x head_dim is not hidden (Qwen3-235B: 64 x 128 = 8192, hidden 4096)
    moe_experts: int = 1  # routed experts (their router is counted only for a shape given in detail)
    detail: Detail = ()  # calc.shape_detail: latent attention, dense-first layers, shared experts, local attention

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ModelShape:
        """From a `model` table row; raises InvalidInput naming the first missing column."""
        for col in ("layers", "hidden", "heads", "ffn_hidden", "vocab"):
            if row.get(col) in (None, 0):
                raise InvalidInput(f"model {row.get('id', '?')} has no {col} in the catalog; FLOPs cannot be computed")
        return cls(
            layers=int(row["layers"]),
            hidden=int(row["hidden"]),
            heads=int(row["heads"]),
            kv_heads=int(row.get("kv_heads") or row["heads"]),
            ffn_hidden=int(row["ffn_hidden"]),
            vocab=int(row["vocab"]),
            swiglu=(row.get("ffn_kind") or "gelu") == "swiglu",
            moe_top_k=int(row.get("moe_top_k") or 1),
            params=_positive_or_none(row.get("params")),
            active_params=_positive_or_none(row.get("active_params")),
            head_dim=int(row["head_dim"]) if row.get("head_dim") else None,
            moe_experts=int(row.get("moe_experts") or 1),
            detail=parse_detail(row.get("shape_detail")),
        )

    def part(self, key: str) -> float:
        """A shape_detail value, 0 when the shape does not state it."""
        return dict(self.detail).get(key, 0.0)

    @property
    def attention(self) -> float:
        """a: the width of the queries, scores and attention output (heads x head_dim, else hidden)."""
        return self.heads * self.head_dim if self.head_dim else float(self.hidden)

    @property
    def kv_hidden(self) -> float:
        return self.attention * self.kv_heads / self.heads

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.swiglu else 2

    @property
    def score_width(self) -> float:
        """The width attention scores and values use: `attention`, or for latent attention heads x (qk + v) / 2
        (queries and keys qk_nope + qk_rope wide, values v_head_dim wide)."""
        if not self.part("kv_lora_rank"):
            return self.attention
        return self.heads * (self.part("qk_nope_head_dim") + self.part("qk_rope_head_dim") + self.part("v_head_dim")) / 2


def _positive_or_none(value: Any) -> float | None:
    return float(value) if value not in (None, "") and float(value) > 0 else None


def nemo(shape: ModelShape, seq_len: int) -> float:
    """NeMo's llama2/gpt3 count before 2025-08-09 (= Megatron-LM 2024-03..2025-03): reproduces NVIDIA's tables.

    F = 6 * [L * (2*h*a + 2*h*h_kv + m*h*f*k) + h*V] + 12*L*s*a       (FLOP per token)

    >>> from perfledger.calc.flops import LLAMA2_7B
    >>> round(nemo(LLAMA2_7B, 4096) / 1e9, 3)  # Llama 2 7B at s=4096 (formulas.md: 46.085 GFLOP/token)
    46.085
    """
    return _dense_terms(shape) + _attention(shape, seq_len, 12)


def causal(shape: ModelShape, seq_len: int) -> float:
    """NeMo since 2025-08-09 and Megatron-LM since 2025-03-06: attention halved for the causal mask.

    F = 6 * [L * (2*h*a + 2*h*h_kv + m*h*f*k) + h*V] + 6*L*s*a       (FLOP per token)

    >>> from perfledger.calc.flops import LLAMA2_7B
    >>> round(causal(LLAMA2_7B, 4096) / 1e9, 2)
    42.86
    """
    return _dense_terms(shape) + _attention(shape, seq_len, 6)


def six_n(shape: ModelShape, seq_len: int) -> float:
    """The classic estimate: 6 FLOPs per parameter per token, attention scores ignored (N = active params).

    F = 6 * N                                                        (FLOP per token)

    >>> from perfledger.calc.flops import LLAMA2_7B
    >>> round(six_n(LLAMA2_7B, 4096) / 1e9, 2)
    40.43
    """
    return 6 * _params(shape)


def palm(shape: ModelShape, seq_len: int) -> float:
    """PaLM Appendix B: 6N plus attention, no causal halving (N = active params incl. embeddings).

    F = 6 * N + 12 * L * s * a                                      (FLOP per token)

    >>> from perfledger.calc.flops import LLAMA2_7B
    >>> round(palm(LLAMA2_7B, 4096) / 1e9, 2)
    46.87
    """
    return 6 * _params(shape) + _attention(shape, seq_len, 12)


def _dense_terms(shape: ModelShape) -> float:
    """6 x the multiply-adds of every weight a token meets: attention projections, FFNs, the output layer."""
    return 6 * (shape.layers * _projections(shape) + _ffns(shape) + shape.hidden * shape.vocab)


def _projections(shape: ModelShape) -> float:
    """One layer's attention projections: q, k, v, o; for latent attention its down and up projections."""
    h = shape.hidden
    if not shape.part("kv_lora_rank"):
        return 2 * h * shape.attention + 2 * h * shape.kv_hidden
    heads, q_rank, kv_rank = shape.heads, shape.part("q_lora_rank"), shape.part("kv_lora_rank")
    qk, rope, v = shape.part("qk_nope_head_dim") + shape.part("qk_rope_head_dim"), shape.part("qk_rope_head_dim"), \
        shape.part("v_head_dim")
    q = h * q_rank + q_rank * heads * qk if q_rank else h * heads * qk
    kv = h * (kv_rank + rope) + kv_rank * heads * (shape.part("qk_nope_head_dim") + v)
    return q + kv + h * heads * v


def _ffns(shape: ModelShape) -> float:
    """Every layer's FFN: the dense-first layers at their width, the others top-k (plus shared) experts, and, for a
    shape given in detail, each MoE layer's router (hidden x experts)."""
    m, h = shape.mlp_matrices, shape.hidden
    dense = int(shape.part("first_dense_layers"))
    router = h * shape.moe_experts if shape.detail and shape.moe_experts > 1 else 0.0
    per_moe = m * h * shape.ffn_hidden * (shape.moe_top_k + shape.part("shared_experts")) + router
    return dense * m * h * shape.part("dense_ffn_hidden") + (shape.layers - dense) * per_moe


def _attention(shape: ModelShape, seq_len: int, per_pair: float) -> float:
    """Attention scores and values: per_pair x L x s x width (12: every pair, 6: the causal half); a local layer
    (sliding_window, all but every global_every-th) attends to its window alone, 12 x (W - W^2 / 2s) x width."""
    width, window, every = shape.score_width, shape.part("sliding_window"), int(shape.part("global_every"))
    if not window or not every or window >= seq_len:
        return per_pair * shape.layers * seq_len * width
    global_layers = shape.layers // every
    local = 12 * (window - window**2 / (2 * seq_len)) * width
    return per_pair * global_layers * seq_len * width + (shape.layers - global_layers) * local


def _params(shape: ModelShape) -> float:
    n = shape.active_params or shape.params
    if n is None:
        raise InvalidInput("this formula needs the model's parameter count, which the catalog does not have")
    return n


def causal_mtp(shape: ModelShape, seq_len: int) -> float:
    """`causal` with the model's multi-token-prediction layers counted (shape_detail mtp_layers; Megatron-Bridge's
    DeepSeek-V3 tables): each one more MoE layer, its 2h x h input projection and its own output layer.

    F = causal + 6 * n_mtp * [proj + ffn of one MoE layer + 2*h*h + h*V] + 6 * n_mtp * s * a     (FLOP per token)
    """
    n = shape.part("mtp_layers")
    moe = _ffns(replace(shape, layers=1, detail=tuple(d for d in shape.detail if d[0] != "first_dense_layers")))
    weights = _projections(shape) + moe + 2 * shape.hidden**2 + shape.hidden * shape.vocab
    return causal(shape, seq_len) + 6 * n * (weights + seq_len * shape.score_width)


FORMULAS: dict[str, Callable[[ModelShape, int], float]] = {
    "nemo": nemo,
    "causal": causal,
    "6n": six_n,
    "palm": palm,
    "causal_mtp": causal_mtp,
}
FORMULA_TITLES = {
    "nemo": "NeMo / Megatron 2024 (F_req; reproduces NVIDIA's published TFLOPS)",
    "causal": "causal-halved attention (NeMo since 2025-08, Megatron since 2025-03)",
    "6n": "6N (parameters only)",
    "palm": "6N + 12·L·s·h (PaLM Appendix B)",
    "causal_mtp": "causal-halved attention with the multi-token-prediction layers counted (Megatron-Bridge)",
}
DEFAULT_FORMULA = "nemo"


def flops_per_token(shape: ModelShape, seq_len: int, formula: str = DEFAULT_FORMULA) -> float:
    """Training FLOPs per token under the named formula (see FORMULAS); FLOP/token.

    >>> from perfledger.calc.flops import LLAMA2_70B
    >>> round(flops_per_token(LLAMA2_70B, 4096) / 1e9, 1)  # Llama 2 70B, GQA 8 kv heads, SwiGLU
    444.5
    """
    if seq_len is None or seq_len <= 0:
        raise InvalidInput(f"seq_len must be a positive number of tokens, got {seq_len}")
    try:
        fn = FORMULAS[formula]
    except KeyError:
        raise InvalidInput(f"unknown FLOPs formula {formula!r}; known: {', '.join(FORMULAS)}") from None
    return fn(shape, seq_len)


LORA_FACTOR = 4 / 6  # forward 2 + activation gradients 2 of the full 6: frozen weights get no weight gradient
# workload -> (factor on the training FLOPs per token, what the factor says); a workload not here trains every weight
WORKLOAD_CONVENTIONS: dict[str, tuple[float, str]] = {
    "lora_finetune": (LORA_FACTOR, "LoRA: the frozen weights get no weight gradient, 4/6 of full training's FLOPs"),
}


def workload_flops_per_token(shape: ModelShape, seq_len: int, workload: str | None,
                             formula: str = DEFAULT_FORMULA) -> float:
    """Training FLOPs per token of a run of this workload: the formula's count, times the workload's factor (LoRA
    4/6: forward 2 and activation gradients 2 per parameter, no weight gradients for the frozen weights). An RL
    step's generation is not training and is not counted. FLOP/token.

    >>> round(workload_flops_per_token(LLAMA2_70B, 4096, "lora_finetune") / flops_per_token(LLAMA2_70B, 4096), 4)
    0.6667
    """
    factor, _ = WORKLOAD_CONVENTIONS.get(workload or "", (1.0, ""))
    return flops_per_token(shape, seq_len, formula) * factor


def workload_title(workload: str | None, formula: str = DEFAULT_FORMULA) -> str:
    """The FLOPs convention a run of this workload is counted under, in words."""
    title = FORMULA_TITLES[formula]
    return f"{title} x {WORKLOAD_CONVENTIONS[workload][1]}" if workload in WORKLOAD_CONVENTIONS else title


# Shapes used by the docstring examples (formulas.md section 2); the store's model table is the real source.
LLAMA2_7B = ModelShape(layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=11008, vocab=32000, swiglu=True,
                       params=6.738e9)
LLAMA2_70B = ModelShape(layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=32000, swiglu=True,
                        params=68.977e9)
