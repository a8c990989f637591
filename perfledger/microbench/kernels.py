"""The timed kernels: a pre-LayerNorm GPT-2 block (forward, forward+backward) and a square matmul.

torch is imported inside the functions, never at module level, so this module imports without torch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from typing import TYPE_CHECKING, TextIO

from perfledger.calc.block_flops import matmul_flops, transformer_block_flops
from perfledger.microbench.device import synchronizer, torch_dtype
from perfledger.microbench.records import BenchConfig, Measurement, describe, summarize, time_calls

if TYPE_CHECKING:
    import torch  # type: ignore[import-not-found, unused-ignore]

ATTENTION = "causal scaled_dot_product_attention; FLOPs count the full s^2 term (F_req, no causal halving)"
FORWARD = "training forward (autograd on, graph discarded); fwd+bwd adds input and weight gradients"


@dataclass(frozen=True, slots=True)
class _BlockWeights:
    """A pre-LayerNorm GPT-2 block: attention (QKV, output projection) then a GELU MLP, with biases."""

    ln1_w: torch.Tensor
    ln1_b: torch.Tensor
    qkv_w: torch.Tensor
    qkv_b: torch.Tensor
    proj_w: torch.Tensor
    proj_b: torch.Tensor
    ln2_w: torch.Tensor
    ln2_b: torch.Tensor
    fc_w: torch.Tensor
    fc_b: torch.Tensor
    out_w: torch.Tensor
    out_b: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def _block_weights(config: BenchConfig, dtype: torch.dtype, device: str) -> _BlockWeights:
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    h, f = config.hidden, config.ffn_hidden

    def weight(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, device=device) * 0.02).to(dtype).requires_grad_()

    def const(value: float, size: int) -> torch.Tensor:
        return torch.full((size,), value, dtype=dtype, device=device, requires_grad=True)

    return _BlockWeights(const(1, h), const(0, h), weight(3 * h, h), const(0, 3 * h), weight(h, h), const(0, h),
                         const(1, h), const(0, h), weight(f, h), const(0, f), weight(h, f), const(0, h))


def _block_forward(x: torch.Tensor, w: _BlockWeights, heads: int) -> torch.Tensor:
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch.nn.functional as F  # type: ignore[import-not-found, unused-ignore]

    b, s, h = x.shape
    y = F.layer_norm(x, (h,), w.ln1_w, w.ln1_b)
    q, k, v = F.linear(y, w.qkv_w, w.qkv_b).view(b, s, 3, heads, h // heads).permute(2, 0, 3, 1, 4).unbind(0)
    attended = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
    x = x + F.linear(attended, w.proj_w, w.proj_b)
    y = F.layer_norm(x, (h,), w.ln2_w, w.ln2_b)
    return x + F.linear(F.gelu(F.linear(y, w.fc_w, w.fc_b), approximate="tanh"), w.out_w, w.out_b)


def measure_block(config: BenchConfig, precision: str, batch: int, device: str, *, backward: bool) -> Measurement:
    """Forward, or forward+backward (input and weight gradients), of one block at one batch size."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    dtype = torch_dtype(precision)
    w = _block_weights(config, dtype, device)
    x = torch.randn(batch, config.seq_len, config.hidden, dtype=dtype, device=device, requires_grad=True)
    grad_out = torch.randn_like(x)
    inputs = (x, *w.tensors())

    def forward() -> object:
        return _block_forward(x, w, config.heads)

    def forward_backward() -> object:
        return torch.autograd.grad(_block_forward(x, w, config.heads), inputs, grad_outputs=grad_out)

    call = forward_backward if backward else forward
    timing = summarize(time_calls(call, synchronizer(device), warmup=config.warmup, repeats=config.repeats))
    flops = transformer_block_flops(batch, config.seq_len, config.hidden, config.ffn_hidden, backward=backward)
    return Measurement("block", precision, timing, flops, batch=batch, seq_len=config.seq_len, hidden=config.hidden,
                       heads=config.heads, ffn_hidden=config.ffn_hidden, pass_="fwd+bwd" if backward else "fwd")


def measure_matmul(config: BenchConfig, precision: str, size: int, device: str) -> Measurement:
    """One square (size x size) @ (size x size) product into a preallocated output."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    a, b, out = (torch.randn(size, size, device=device, dtype=torch_dtype(precision)) for _ in range(3))
    timing = summarize(time_calls(lambda: torch.mm(a, b, out=out), synchronizer(device),
                                  warmup=config.warmup, repeats=config.repeats))
    return Measurement("matmul", precision, timing, matmul_flops(size, size, size), m=size, n=size, k=size)


def run_all(config: BenchConfig, device: str, out: TextIO, log: Callable[[str], None]) -> list[Measurement]:
    """Every measurement of the config, each written to `out` as one JSON line as soon as it is taken."""
    # torch is optional (requirements-torch.txt): it loads only when a benchmark runs
    import torch

    done: list[Measurement] = []
    for label, job in _jobs(config, device):
        try:
            measurement = job()
        except torch.OutOfMemoryError:
            log(f"{label}: skipped, out of device memory")
            continue
        finally:
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        out.write(json.dumps(measurement.to_json()) + "\n")
        out.flush()
        log(describe(measurement))
        done.append(measurement)
    return done


def _jobs(config: BenchConfig, device: str) -> Iterator[tuple[str, Callable[[], Measurement]]]:
    for precision in config.precisions:
        for size in config.matmul_sizes:
            yield f"{precision} matmul {size}^3", partial(measure_matmul, config, precision, size, device)
        for batch in config.batches:
            for backward in (False, True):
                yield (f"{precision} block batch {batch} {'fwd+bwd' if backward else 'fwd'}",
                       partial(measure_block, config, precision, batch, device, backward=backward))
