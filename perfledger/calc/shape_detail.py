"""Architecture a FLOPs count needs beyond the catalog's common columns, as a model row's `shape_detail` cell:
"key=value; key=value", each key one of DETAIL_KEYS, each value a positive number, as a publisher's model config
states it (MaxText's models/deepseek3-671b.yml, a Hugging Face config.json).

    first_dense_layers   layers before the first MoE layer, each a dense FFN of dense_ffn_hidden
    dense_ffn_hidden     those layers' FFN width (ffn_hidden is then one expert's)
    shared_experts       experts every token uses besides its top-k routed ones
    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
                         multi-head latent attention (DeepSeek-V3): its projections and score widths
    sliding_window       the window of the local-attention layers
    global_every         every n-th layer attends globally, the others within sliding_window (gpt-oss: 2)
    mtp_layers           multi-token-prediction layers (DeepSeek-V3: 1); counted only by the flops "causal_mtp"
                         convention (Megatron's), not by the default count (MaxText's leaves them out)
"""

from __future__ import annotations

import math

from perfledger.errors import InvalidInput

DETAIL_KEYS = ("first_dense_layers", "dense_ffn_hidden", "shared_experts", "q_lora_rank", "kv_lora_rank",
               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "sliding_window", "global_every", "mtp_layers")
Detail = tuple[tuple[str, float], ...]


def parse_detail(cell: object) -> Detail:
    """The (key, value) pairs of a shape_detail cell, in DETAIL_KEYS order; InvalidInput names a bad part.

    >>> parse_detail("sliding_window=128; global_every=2")
    (('sliding_window', 128.0), ('global_every', 2.0))
    """
    text = str(cell or "").strip()
    found: dict[str, float] = {}
    for part in (p.strip() for p in text.split(";") if p.strip()):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or key not in DETAIL_KEYS:
            raise InvalidInput(f"shape_detail part {part!r} is not key=value with a key among {', '.join(DETAIL_KEYS)}")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not math.isfinite(number) or number < 0:
            raise InvalidInput(f"shape_detail {key}={value!r} is not a non-negative number")
        found[key] = number
    if "kv_lora_rank" in found and not {"qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"} <= set(found):
        raise InvalidInput("shape_detail with kv_lora_rank (latent attention) needs qk_nope_head_dim, "
                           "qk_rope_head_dim and v_head_dim")
    if ("sliding_window" in found) != ("global_every" in found):
        raise InvalidInput("shape_detail needs sliding_window and global_every together")
    return tuple((k, found[k]) for k in DETAIL_KEYS if k in found)
