"""python -m perfledger.microbench: measure this machine's accelerator and write a result file.

A GPT-2 XL transformer block (hidden 1600, 25 heads, seq 1024; batch 8, 16, 32, 64), forward and
forward+backward timed separately, as in Emani et al. (arXiv 2310.04607), plus a square-matmul sweep
that finds the highest matmul TFLOPS per precision. The result file is JSON lines: a header object
(HEADER_KEY: FORMAT_VERSION, device, software, config), then one object per measurement; `python -m
ingest FILE` stores it (ingest/parsers/microbench.py).

torch is optional for perfledger: it is imported only when a benchmark runs (requirements-torch.txt).
"""

from __future__ import annotations

HEADER_KEY = "perfledger_microbench"
FORMAT_VERSION = 1
BLOCK_KINDS = ("block", "matmul")
PASSES = ("fwd", "fwd+bwd")
BACKENDS = ("cuda", "rocm", "cpu")
TORCH_MISSING = "torch is not installed: pip install -r requirements-torch.txt"
