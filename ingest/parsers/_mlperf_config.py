"""What an MLPerf result file says about the system and the model outside the step events: the
`submission_platform` name, and the model shape in MLLOG keys or in a framework's configuration dump
(NeMo prints its Hydra config as YAML, or as a dict, into the same file)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ingest.parsers._common import INT64_MAX, to_int

# "1xXE9680x8H100-SXM-80GB": nodes x system x devices-per-node + accelerator; "64xNVIDIA DGX H100": nodes x system
_PLATFORM = re.compile(r"^\s*(\d+)\s*x\s*(.+?)\s*$")
_SYSTEM_DEVICES = re.compile(r"^(.+?)[x_](\d+)\s*x?\s*([A-Za-z].*)$")  # "XE9680x8H100", "XE9785L_8xMI355X"
# "gaudi-1024": an accelerator and how many of them; a TPU slice's suffix ("v5p-1024") counts cores, not chips
_NAMED_COUNT = re.compile(r"^\s*([A-Za-z][\w.]*?)-(\d+)\s*$")
_TPU = re.compile(r"tpu|^v\d", re.IGNORECASE)
# launcher banners around the MLLOG events: "GPUS_PER_NODE=8", "NNODES=1", "WORLD_SIZE=64", "--nproc_per_node 8"
BANNER_KEYS = {"GPUS_PER_NODE": "devices_per_node", "NPROC_PER_NODE": "devices_per_node", "DGXNGPU": "devices_per_node",
               "NGPUS_PER_NODE": "devices_per_node", "nproc_per_node": "devices_per_node", "NNODES": "nodes",
               "NUM_NODES": "nodes", "DGXNNODES": "nodes", "nnodes": "nodes", "WORLD_SIZE": "world_size"}
_BANNER = re.compile(r"(?<![\w-])-{0,2}(" + "|".join(sorted(BANNER_KEYS, key=len, reverse=True))
                     + r")(?:\s*[=:]\s*|\s+)(\d+)(?![\w.])")

# config key as printed -> RunConfig field; the first one a file states wins
SHAPE_KEYS = {
    "max_sequence_length": "seq_len", "encoder_seq_length": "seq_len", "seq_length": "seq_len",
    "max_seq_length": "seq_len", "max_seq_len": "seq_len", "seq_len": "seq_len", "sequence_length": "seq_len",
    "num_layers": "num_layers", "num_hidden_layers": "num_layers", "n_layers": "num_layers",
    "hidden_size": "hidden_size", "ffn_hidden_size": "ffn_hidden_size", "intermediate_size": "ffn_hidden_size",
    "num_attention_heads": "num_attention_heads", "n_heads": "num_attention_heads",
    "num_query_groups": "num_kv_heads", "num_key_value_heads": "num_kv_heads", "n_kv_heads": "num_kv_heads",
    "padded_vocab_size": "vocab_size", "vocab_size": "vocab_size",
}
CONFIG_LITERALS = [f"{k}:" for k in SHAPE_KEYS] + [f"{k}':" for k in SHAPE_KEYS] + [f'{k}":' for k in SHAPE_KEYS] \
    + list(BANNER_KEYS)
_CONFIG_PAIR = re.compile(r"(?<![\w.])['\"]?(" + "|".join(sorted(SHAPE_KEYS, key=len, reverse=True))
                          + r")['\"]?:\s*(\d+)(?![\w.])")


@dataclass(frozen=True, slots=True)
class Platform:
    nodes: int | None = None
    system: str | None = None
    devices_per_node: int | None = None
    accelerator: str | None = None  # the accelerator as printed, or the system name when no accelerator is named
    total: int | None = None  # devices named outright ("gaudi-1024")

    @property
    def devices(self) -> int | None:
        if self.total:
            return self.total
        if self.nodes and self.devices_per_node and self.nodes * self.devices_per_node <= INT64_MAX:
            return self.nodes * self.devices_per_node
        return None


def read_platform(text: str | None) -> Platform:
    """'1xXE9680x8H100-SXM-80GB' -> 1 node of XE9680 with 8 H100-SXM-80GB ('1xXE9785L_8xMI355X' likewise);
    '64xNVIDIA DGX H100' -> 64 nodes of NVIDIA DGX H100 (devices per node not stated); 'gaudi-1024' -> 1024 gaudi;
    'tpu-v5p' -> no count."""
    if not text or not text.strip():
        return Platform()
    m = _PLATFORM.match(text)
    if m is None:
        named = _NAMED_COUNT.match(text)
        if named is not None and not _TPU.search(named.group(1)) and (total := to_int(named.group(2))):
            return Platform(accelerator=text.strip(), total=total)
        return Platform(accelerator=text.strip())
    nodes, rest = to_int(m.group(1)), m.group(2)
    if (s := _SYSTEM_DEVICES.match(rest)) is not None:
        return Platform(nodes, s.group(1).strip(), to_int(s.group(2)), s.group(3).strip())
    return Platform(nodes, rest, None, rest)


def banner_pairs(line: str) -> list[tuple[str, int]]:
    """('nodes' | 'devices_per_node' | 'world_size', value) for each launcher setting a line states."""
    out = []
    for key, value in _BANNER.findall(line):
        number = to_int(value)
        if number is not None and 0 < number <= INT64_MAX:
            out.append((BANNER_KEYS[key], number))
    return out


def banner_devices(banner: dict[str, int]) -> int | None:
    """WORLD_SIZE, else NNODES x GPUS_PER_NODE (a single node when only the devices per node are printed)."""
    if banner.get("world_size"):
        return banner["world_size"]
    per_node = banner.get("devices_per_node")
    nodes = banner.get("nodes", 1 if per_node else None)
    return nodes * per_node if nodes and per_node and nodes * per_node <= INT64_MAX else None


def config_pairs(line: str) -> list[tuple[str, int]]:
    """(RunConfig field, value) for each model-shape key a configuration line states ('  seq_length: 8192',
    "{'num_layers': 126, ...}")."""
    out = []
    for key, value in _CONFIG_PAIR.findall(line):
        number = to_int(value)
        if number is not None and number > 0:
            out.append((SHAPE_KEYS[key], number))
    return out


def shape_from_values(values: dict[str, Any]) -> dict[str, int]:
    """Model-shape fields from MLLOG key/value events (`max_sequence_length`, and any of SHAPE_KEYS)."""
    out: dict[str, int] = {}
    for key, field in SHAPE_KEYS.items():
        value = values.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT64_MAX:
            out.setdefault(field, value)
    return out
