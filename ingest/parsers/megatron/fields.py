"""What a Megatron iteration line holds and how each field is spelled: the regexes, anchors and the compiled
scanner's spec, shared by the scan (ingest/parsers/megatron/scan.py) and the parser."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.parsers._common import NUM


@dataclass(frozen=True, slots=True)
class _Labeled:
    """A field printed as ``<label><head><value><tail> |``: its regex, and what the text between its label and
    the next ``|`` looks like when that regex matches there (so it can be checked without a capture).

    A tail, when there is one, starts with ``/`` (``12.5/13.0``); values never contain ``/`` or spaces.
    """

    label: str
    value: str
    head: str = r"\s*"
    tail: str = ""
    also_spelled: tuple[str, ...] = ()

    @property
    def pattern(self) -> str:
        labels = "|".join(_escape(label) for label in (self.label, *self.also_spelled))
        return (f"(?:{labels})" if self.also_spelled else labels) + rf"{self.head}({self.value}){self.tail}\s*\|"

    @property
    def token(self) -> str:
        return rf"^{self.head}(?:{self.value}){self.tail}\s*$"


def _escape(text: str) -> str:
    return re.sub(r"[\\^$.|?*+()\[\]{}]", lambda m: "\\" + m.group(), text)


_INT = r"\d+"
_RATIO = rf"(?:/{NUM})?"
_LABELED: dict[str, _Labeled] = {
    "_step": _Labeled("iteration", _INT, head=r"\s+", tail=r"\s*/\s*\d+"),
    "elapsed_ms": _Labeled("elapsed time per iteration (ms):", NUM, tail=_RATIO),
    "lr": _Labeled("learning rate:", NUM),
    "gbs": _Labeled("global batch size:", _INT),
    "loss": _Labeled("lm loss:", NUM, also_spelled=("lm-loss:",)),
    "grad_norm": _Labeled("grad norm:", NUM),
    "tflops": _Labeled("throughput per GPU (TFLOP/s/GPU):", NUM, tail=_RATIO),
    "tok_gpu": _Labeled("tokens per GPU (tokens/s/GPU):", NUM, tail=_RATIO),
    "tgs": _Labeled("tokens per gpu per second (tgs):", NUM),
    "consumed_tokens": _Labeled("consumed tokens:", _INT),
    "consumed_samples": _Labeled("consumed samples:", _INT),
    "seqlen": _Labeled("actual seqlen:", _INT),
    "skipped": _Labeled("number of skipped iterations:", _INT),
    "nan_iters": _Labeled("number of nan iterations:", _INT),
}
_STEP = _LABELED["_step"].pattern
_FIELDS: dict[str, str] = {name: field.pattern for name, field in _LABELED.items() if name != "_step"} | {
    "tflops_ds": rf"\|\s*TFLOPs:\s*({NUM})\s*\|",
    "tok_total": rf"\|\s*tokens per second:\s*({NUM})\s*\|",
    "mem_max": rf"max mem usage/usage_ratio:\s*({NUM})GB",
    "mem": rf"mem usage/free/total/usage_ratio:\s*({NUM})GB",
}
_LAUNCH_LITERALS = ("-- arguments --", "using world size:")
_LAUNCH = "|".join(map(_escape, _LAUNCH_LITERALS))
_ITERATION = "iteration "  # a line holding it is read for a step; any other line may configure the run
_CONFIG_HINT = (
    r"\w ?\.{2,} ?\S|using world size|^\s*[a-z_0-9]+: \S|--num-layers|--seq-length|--nproc"
    r"|padded vocab|GPU \d+: .+\(UUID|memory \(MB\)|dist_world_size=|DeepSpeed info: version|Primus|MindSpeed"
    r"|mindspeed|megatron\.bridge|habana_frameworks|Megatron-DeepSpeed|deepspeed\.launcher"
)

_KEYS_TEXT = (
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "group_query_attention", "padded_vocab_size", "vocab_size", "swiglu", "gated_linear_unit", "num_experts",
    "num_moe_experts", "moe_router_topk", "seq_length", "encoder_seq_length", "global_batch_size",
    "micro_batch_size", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "expert_model_parallel_size", "data_parallel_size", "world_size", "fp16", "bf16", "fp8", "mixed_precision",
    "train_iters", "nproc_per_node", "nnodes", "log_interval",
)


def _as_dumped(keys: list[str]) -> list[str]:
    """How an argument dump may print each key for _ARG_DUMP: as is, or with one "_" as a space ("num layers")."""
    return sorted({*keys} | {key[:i] + " " + key[i + 1:] for key in keys
                                             for i, c in enumerate(key) if c == "_"})


# Every line _config_line can take something from contains one of these (it reads the line after its rank
# prefix, a suffix of the line): a necessary condition, so filtering on it changes nothing but the time spent
# on rank-prefixed chatter, which _CONFIG_HINT alone lets through ("0: [default0]:..." looks like YAML). A dump
# line counts only when _ARG_DUMP's key is one _set keeps (or DeepSpeed's train_batch_size): Megatron's timers
# ("save-checkpoint ....: (12.3, 14.1)") were three in four lines read as configuration, 0.4 s/GB.
_CONFIG_USED = (
    r"Primus|MindSpeed|mindspeed|megatron\.bridge|habana_frameworks|DeepSpeed info|deepspeed info"
    r"|deepspeed\.launcher|using world size|padded vocab|\(UUID|memory \(MB\)|dist_world_size=| --"
    r"|(?:" + "|".join(_as_dumped([*_KEYS_TEXT, "train_batch_size"])) + r") ?\.\."
    r"|(?:" + "|".join(sorted(_KEYS_TEXT)) + r"): [^\s#]"
)



# A literal every match of the _FIELDS pattern of the same name contains: a field whose anchor no line of a chunk
# holds is not searched for at all (most logs print a third of the fields Megatron's variants know).
_ANCHORS: dict[str, str] = {
    "elapsed_ms": "elapsed time per iteration (ms):", "lr": "learning rate:", "gbs": "global batch size:",
    "loss": "loss:", "grad_norm": "grad norm:", "tflops": "(TFLOP/s/GPU):", "tflops_ds": "TFLOPs:",
    "tok_gpu": "(tokens/s/GPU):", "tgs": "(tgs):", "tok_total": "tokens per second:",
    "consumed_tokens": "consumed tokens:", "consumed_samples": "consumed samples:", "seqlen": "actual seqlen:",
    "skipped": "number of skipped iterations:", "nan_iters": "number of nan iterations:",
    "mem_max": "max mem usage/usage_ratio:", "mem": "mem usage/free/total/usage_ratio:",
}
_SPELLINGS = {spelling: spelling for field in _LABELED.values() for spelling in field.also_spelled}
_COUNTS = ("skipped", "nan_iters")  # almost always 0: a literal test stands in for the regex when no line says otherwise

_EXTRACTED = ("_step", *(name for name in _FIELDS if name != "consumed_samples"), "consumed_samples")  # _extract's
_SCANNED = ("_step", *(name for name in _LABELED if name != "_step"))
_SCAN_KIND = {"_step": 0, _INT: 1, NUM: 2}  # labeled_scan.c: int64 step, digits as a double, a NUM as a double
_SCAN_HEAD = {r"\s*": 0, r"\s+": 1}
_SCAN_TAIL = {"": 0, _RATIO: 1, _LABELED["_step"].tail: 2}
_SCAN_SPEC = (
    tuple((_LABELED[name].label.encode(), _SCAN_KIND["_step" if name == "_step" else _LABELED[name].value],
           _SCAN_HEAD[_LABELED[name].head], _SCAN_TAIL[_LABELED[name].tail], name in _COUNTS,
           tuple(spelling.encode() for spelling in _LABELED[name].also_spelled)) for name in _SCANNED),
    tuple(_ANCHORS[name].encode() for name in _FIELDS if name not in _LABELED),  # the scanner declines these
    tuple(literal.encode() for literal in _LAUNCH_LITERALS),
    _ITERATION.encode(),
)

