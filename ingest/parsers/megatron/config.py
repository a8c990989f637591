"""Megatron run configuration: the argument dump, YAML config, command line and launcher lines a log prints,
and the RunConfig fields they give. The last value stated wins; each launch in the file keeps its own, and the
run's configuration is its longest launch's."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ingest.parsers._common import (
    grad_accum,
    is_unset,
    precision_from_flags,
    precision_from_name,
    strip_rank_prefix,
    to_bool,
    to_float,
    to_int,
)
from ingest.parsers.base import LogParser
from ingest.parsers.megatron.fields import _KEYS_TEXT

# Every pattern here reads in time linear in the line: a lazy capture is bounded (.{1,200}?) or ends in a class
# the text after it cannot be ((\S(?:.*\S)?)\s*$, not (\S.*?)\s*$, which re-reads each run of spaces).
_ARG_DUMP = re.compile(r"(?:^|\s)([a-z][a-z0-9_]*(?: [a-z0-9_]+)?) ?\.{2,} ?(\S(?:.*\S)?)\s*$")
_YAML = re.compile(r"^\s*([a-z_0-9]+): ([^\s#](?:[^#]*[^\s#])?)\s*(?:#.*)?$")
_FLAG = re.compile(r"--([a-z][a-z0-9_-]*)(?:[ =](?!--)(\S+))?")
_WORLD = re.compile(
    r"using world size:\s*(\d+)(?:.*?data-parallel[- ]size:\s*(\d+))?(?:.*?context-parallel size:\s*(\d+))?"
    r"(?:.*?tensor-model-parallel size:\s*(\d+))?(?:.*?pipeline-model-parallel size:\s*(\d+))?"
)
_PADDED_VOCAB = re.compile(r"padded vocab \(size: (\d+)\).{0,200}?new size: (\d+)")
_GPU_NAME = re.compile(r"GPU \d+: (.{1,200}?) \(UUID")
_MEMORY = re.compile(r"memory \(MB\).{0,400}?max allocated: (\d+\.?\d*)")
_DIST_WORLD = re.compile(r"dist_world_size=(\d+)")
_DS_VERSION = re.compile(r"DeepSpeed info: version=(\S+?),|deepspeed info \.{2,} (\S+?),")

# Argument names (dump, YAML, command line with "-" -> "_") that configure the run: the ones fields.py reads.
_KEYS = frozenset(_KEYS_TEXT)


class _Launch(Enum):
    PENDING = "pending"  # config lines seen, no step yet: not decided whether this launch is kept
    KEPT = "kept"


@dataclass
class _State:
    """Small per-file state; nothing here grows with the number of lines."""

    config: dict[str, str] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    launch: _Launch = _Launch.PENDING
    launches: int = 1
    steps_in_launch: int = 0
    max_step: int | None = None
    first_step: int | None = None
    rows: int = 0
    last_step: int | None = None
    last_consumed_tokens: float | None = None
    last_consumed_samples: float | None = None
    last_gbs: float | None = None
    step_deltas: dict[int, int] = field(default_factory=dict)
    duplicates: int = 0
    launch_no: int = 1  # the launch the steps now read belong to (a restart of the step numbering starts one)
    launch_rows: dict[int, int] = field(default_factory=dict)
    launch_steps: dict[int, tuple[int, int]] = field(default_factory=dict)  # first and last step of each launch
    launch_configs: dict[int, dict[str, str]] = field(default_factory=dict)  # of the launches before launch_no
    restarts: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    skipped_iterations: int = 0
    nan_iterations: int = 0
    rows_with_skips: int = 0
    incomplete_lines: int = 0
    truncated: int = 0
    nonfinite_losses: int = 0
    peak_allocated_mb: float | None = None
    frameworks: set[str] = field(default_factory=set)
    accelerator: str | None = None
    ds_version: str | None = None
    ds_config: dict[str, str] = field(default_factory=dict)
    cli: dict[str, str] = field(default_factory=dict)  # command-line flags: a fallback below the argument dump


class ConfigReader(LogParser):
    """The configuration half of MegatronParser: reads configuration lines into its _State."""

    _s: _State

    def _config_line(self, raw: str) -> None:
        line = strip_rank_prefix(raw)
        s = self._s
        self._framework_markers(line)
        if "[config.py" in line or "[INFO] [config" in line:
            if (m := _ARG_DUMP.search(line)) is not None:
                s.ds_config[m.group(1)] = m.group(2)
            return
        if (m := _DS_VERSION.search(line)) is not None:
            s.ds_version = m.group(1) or m.group(2)
        if (m := _WORLD.search(line)) is not None:
            for key, value in zip(("world_size", "data_parallel_size", "context_parallel_size",
                                   "tensor_model_parallel_size", "pipeline_model_parallel_size"), m.groups(),
                                  strict=True):
                if value is not None:
                    self._set(key, value)
            return
        if (m := _PADDED_VOCAB.search(line)) is not None:
            self._set("padded_vocab_size", m.group(2))
            return
        if (m := _GPU_NAME.search(line)) is not None:
            s.accelerator = s.accelerator or m.group(1).strip()
            return
        if (m := _MEMORY.search(line)) is not None and (mb := to_float(m.group(1))) is not None:
            s.peak_allocated_mb = mb if s.peak_allocated_mb is None else max(s.peak_allocated_mb, mb)
            return
        if (m := _DIST_WORLD.search(line)) is not None:
            self._set("world_size", m.group(1))
            return
        if " --" in line and ("--num-layers" in line or "--seq-length" in line or "--nproc" in line):
            for m in _FLAG.finditer(line):
                key = m.group(1).replace("-", "_")
                if key in _KEYS:
                    s.cli[key] = m.group(2) if m.group(2) is not None else "True"
            return
        if (m := _ARG_DUMP.search(line)) is not None:
            self._set(m.group(1).replace(" ", "_"), m.group(2))
            return
        if (m := _YAML.match(line)) is not None:
            self._set(m.group(1), m.group(2))

    def _framework_markers(self, line: str) -> None:
        fw = self._s.frameworks
        for marker, name in (("Primus", "primus"), ("MindSpeed", "mindspeed-llm"), ("mindspeed", "mindspeed-llm"),
                             ("megatron.bridge", "megatron-bridge"), ("habana_frameworks", "megatron-lm (gaudi)"),
                             ("DeepSpeed info", "megatron-deepspeed"), ("deepspeed info", "megatron-deepspeed"),
                             ("deepspeed.launcher", "megatron-deepspeed")):
            if marker in line:
                fw.add(name)

    def _set(self, key: str, value: str) -> None:
        if key not in _KEYS:
            return
        s = self._s
        target = s.pending if s.launch is _Launch.PENDING and s.max_step is not None else s.config
        target[key] = value.strip().strip("'\"")

    def _get(self, key: str) -> str | None:
        return self._s.config.get(key, self._s.cli.get(key))

    def _config_int(self, key: str) -> int | None:
        value = self._s.config.get(key, self._s.cli.get(key))
        if value is None and key == "global_batch_size":  # Megatron-DeepSpeed before --global-batch-size
            value = self._s.ds_config.get("train_batch_size")
        return None if is_unset(value) else to_int(value)

    def _seq_len(self) -> int | None:
        return self._config_int("seq_length") or self._config_int("encoder_seq_length")

    def _world_size(self) -> int | None:
        world = self._config_int("world_size")
        if world is None and (per_node := self._config_int("nproc_per_node")):
            world = per_node * (self._config_int("nnodes") or 1)
        return world

    def _config_fields(self) -> dict[str, Any]:
        gbs = self._config_int("global_batch_size") or to_int(self._s.last_gbs)
        tp, pp, cp = (self._config_int(k) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                                     "context_parallel_size"))
        world = self._world_size()
        dp = self._config_int("data_parallel_size")
        if dp is None and world and tp and pp:
            dp = world // (tp * pp * (cp or 1)) or None
        heads = self._config_int("num_attention_heads")
        experts = self._config_int("num_experts") or self._config_int("num_moe_experts")
        return {
            "n_devices": world,
            "precision": self._precision(),
            "seq_len": self._seq_len(),
            "global_batch": gbs,
            "micro_batch": self._config_int("micro_batch_size"),
            "grad_accum": grad_accum(gbs, self._config_int("micro_batch_size"), dp),
            "tp": tp, "pp": pp, "dp": dp, "cp": cp,
            "ep": self._config_int("expert_model_parallel_size"),
            "framework": self._framework(),
            "framework_version": self._s.ds_version if "megatron-deepspeed" in self._s.frameworks else None,
            "accelerator_as_printed": self._s.accelerator,
            "num_layers": self._config_int("num_layers"),
            "hidden_size": self._config_int("hidden_size"),
            "ffn_hidden_size": self._config_int("ffn_hidden_size"),
            "num_attention_heads": heads,
            "num_kv_heads": self._kv_heads(heads),
            "vocab_size": self._config_int("padded_vocab_size") or self._config_int("vocab_size"),
            "swiglu": _either_bool(self._get("swiglu"), self._get("gated_linear_unit")),
            "num_experts": experts,
            "moe_top_k": self._config_int("moe_router_topk") if experts else None,
        }

    def _kv_heads(self, heads: int | None) -> int | None:
        gqa = to_bool(self._get("group_query_attention"))
        groups = self._config_int("num_query_groups")
        return groups if gqa is not False and groups is not None else heads

    def _precision(self) -> str | None:
        fp8 = self._get("fp8")
        if fp8 is not None and not is_unset(fp8) and to_bool(fp8) is not False:
            return "fp8"
        named = precision_from_name(self._get("mixed_precision"))
        return named or precision_from_flags(fp8=None, bf16=self._get("bf16"), fp16=self._get("fp16"))

    def _framework(self) -> str:
        for name in ("megatron-deepspeed", "primus", "mindspeed-llm", "megatron-bridge", "megatron-lm (gaudi)"):
            if name in self._s.frameworks:
                return name
        return "megatron-lm"


def _either_bool(*texts: str | None) -> bool | None:
    values = [to_bool(t) for t in texts if t is not None]
    if any(values):
        return True
    return False if values and all(v is False for v in values) else None

