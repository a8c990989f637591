"""Attention width as data: a model whose heads x head_dim is not its hidden size is counted with it."""

from __future__ import annotations

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import flops as fl
from perfledger.catalog.validate import shape_params


def test_head_dim_widens_attention_where_heads_times_head_dim_is_not_hidden() -> None:
    base = {"layers": 94, "hidden": 4096, "heads": 64, "kv_heads": 4, "ffn_hidden": 1536, "vocab": 151936, "swiglu": True, "moe_top_k": 8}
    narrow, wide = fl.ModelShape(**base), fl.ModelShape(**base, head_dim=128)
    assert wide.attention == 8192 and wide.kv_hidden == 512
    # the attention projections (2*h*a) and scores (12*L*s*a) grow with a = 8192, not hidden = 4096
    extra = 6 * 94 * 2 * 4096 * (8192 - 4096) + 6 * 94 * 2 * 4096 * (512 - 256) + 12 * 94 * 4096 * (8192 - 4096)
    assert fl.nemo(wide, 4096) - fl.nemo(narrow, 4096) == pytest.approx(extra)


def test_head_dim_equal_to_hidden_over_heads_changes_nothing() -> None:
    assert fl.nemo(fl.ModelShape(**{**_llama2_7b(), "head_dim": 128}), 4096) == fl.nemo(fl.LLAMA2_7B, 4096)


def _llama2_7b() -> dict[str, object]:
    s = fl.LLAMA2_7B
    return {"layers": s.layers, "hidden": s.hidden, "heads": s.heads, "kv_heads": s.kv_heads, "ffn_hidden": s.ffn_hidden,
                "vocab": s.vocab, "swiglu": s.swiglu, "params": s.params}


def test_the_bundled_qwen3_235b_row_has_its_attention_width(seeded_engine: Engine) -> None:
    row = store.models(seeded_engine).filter(pl.col("id") == "qwen3-235b-a22b").row(0, named=True)
    assert row["head_dim"] == 128 and fl.ModelShape.from_row(row).attention == 8192


def test_shape_params_counts_the_query_width() -> None:
    qwen3_32b = {"layers": 64, "hidden": 5120, "heads": 64, "kv_heads": 8, "head_dim": 128, "ffn_hidden": 25600,
                 "vocab": 151936, "ffn_kind": "swiglu"}
    assert shape_params(qwen3_32b, tied=False) == pytest.approx(32.76e9, rel=0.01)  # config.json: 32.8B
