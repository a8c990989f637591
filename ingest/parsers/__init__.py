"""Registry of parsers in detection order: first whose `sniff(head)` is true wins.

MLPerf comes first because MLPerf runs on Megatron/NeMo print both kinds of line; the JSON formats come
before the line formats because their heads are unambiguous; Megatron-DeepSpeed logs also print Megatron
iteration lines, so DeepSpeed is tried before Megatron.
"""

from __future__ import annotations

import importlib

from ingest.parsers.base import LogParser

# Module names under ingest.parsers, in detection order. Each module defines PARSER: type[LogParser]
# with a classmethod sniff(head: str, file_name: str) -> bool.
ORDER = (
    "mlperf",
    "microbench",
    "claims_csv",
    "megatron_golden",
    "dllogger",
    "hf_trainer_state",
    "hf_results_json",
    "optimum_habana",
    "deepspeed",
    "nemo",
    "torchtitan",
    "megatron",
    "hf_trainer_log",
    "nanogpt",
    "llmc",
)


def registry() -> tuple[type[LogParser], ...]:
    """The parser classes in detection order; a module not written yet is skipped."""
    found = []
    for name in ORDER:
        try:
            module = importlib.import_module(f"ingest.parsers.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ingest.parsers.{name}":
                raise
            continue
        found.append(module.PARSER)
    return tuple(found)
