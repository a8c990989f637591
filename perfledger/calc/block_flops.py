"""FLOPs of the micro-benchmark's kernels: one transformer block, one matmul.

Both count a multiply-add as 2 FLOPs and count model FLOPs only (no recompute, no causal halving), the
F_req convention of the rest of perfledger.calc, so a block's TFLOPS sits on the same axis as a training
run's model TFLOPS per device.
"""

from __future__ import annotations

from perfledger.errors import InvalidInput


def transformer_block_flops(
    batch: int, seq_len: int, hidden: int, ffn_hidden: int | None = None, *, backward: bool
) -> float:
    """FLOPs of one pass of one dense multi-head transformer block over a batch (FLOP, not FLOP/s).

    forward          = 2*B*s*(4*h^2 + 2*h*f) + 4*B*s^2*h
    forward+backward = 3 * forward

    B batch (sequences), s sequence length (tokens), h hidden size, f MLP hidden size (default 4*h).
    The first term is the matmuls on weights: QKV (3h^2) and output projection (h^2), and the MLP's two
    matrices (2*h*f); the second is attention scores (Q K^T) and the weighted values, 2*B*s^2*h each.
    Backward is twice the forward (weight gradients and input gradients). Recompute is not counted and the
    attention term is not halved for a causal mask: per token this is one layer of F_req in
    reference/formulas.md (6*(4h^2 + 2hf) + 12*s*h for forward+backward). Layer norms, softmax, GELU,
    biases and residual adds are left out.

    >>> transformer_block_flops(8, 1024, 1600, backward=False)  # GPT-2 XL layer, batch 8: 0.557 TFLOP
    557003571200.0
    >>> transformer_block_flops(8, 1024, 1600, backward=True)  # forward + backward: 1.671 TFLOP
    1671010713600.0
    """
    ffn = 4 * hidden if ffn_hidden is None else ffn_hidden
    _require_positive(batch=batch, seq_len=seq_len, hidden=hidden, ffn_hidden=ffn)
    tokens = float(batch) * seq_len
    forward = 2.0 * tokens * (4.0 * hidden * hidden + 2.0 * hidden * ffn) + 4.0 * tokens * seq_len * hidden
    return 3.0 * forward if backward else forward


def matmul_flops(m: int, n: int, k: int) -> float:
    """FLOPs of one (m x k) @ (k x n) matrix product (FLOP).

    flops = 2*m*n*k    (one multiply and one add per term of each of the m*n dot products of length k)

    >>> matmul_flops(4096, 4096, 4096)  # 137.4 GFLOP
    137438953472.0
    """
    _require_positive(m=m, n=n, k=k)
    return 2.0 * m * n * k


def _require_positive(**values: int) -> None:
    for name, value in values.items():
        if value <= 0:
            raise InvalidInput(f"{name} must be a positive integer, got {value}")
