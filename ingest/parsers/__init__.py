"""Registry of the grammars in detection order (ingest/detect.py weighs their evidence; ties go to this order).

A reader here is a grammar, not a tool: record streams (metrics: JSON lines, CSV, JSON documents; TensorBoard
events; MLPerf's MLLOG events), console lines (key_value: named values, printed dicts, progress bars, blocks and box
tables), and a grammar of its own only where a format needs one (Megatron, DeepSpeed, NeMo, torchtitan, MLPerf,
the Hugging Face and Megatron JSON documents, claims tables). Which framework wrote a log is data
(data/frameworks.csv, data/metric_keys.csv, data/config_keys.csv), read by the generic grammars.

MLPerf comes first because MLPerf runs on Megatron/NeMo print both kinds of line; the JSON documents come before the
line formats because their heads are unambiguous; Megatron-DeepSpeed logs also print Megatron iteration lines, so
DeepSpeed is tried before Megatron. The record-stream and console readers come last: readers of last resort.
"""

from __future__ import annotations

from ingest.parsers import (
    claims_csv,
    deepspeed,
    hf_trainer_state,
    key_value_log,
    megatron,
    megatron_golden,
    metrics_file,
    microbench,
    mlperf,
    nemo,
    optimum_habana,
    tensorboard,
    torchtitan,
)
from ingest.parsers.base import LogParser

PARSERS: tuple[type[LogParser], ...] = (
    tensorboard.PARSER,  # binary: asked first, by its bytes (LogParser.sniff_bytes)
    mlperf.PARSER,
    microbench.PARSER,
    claims_csv.PARSER,
    megatron_golden.PARSER,
    hf_trainer_state.PARSER,
    optimum_habana.PARSER,
    deepspeed.PARSER,
    nemo.PARSER,
    torchtitan.PARSER,
    megatron.PARSER,
    metrics_file.PARSER,  # any record stream the key vocabulary reads: after every format of its own
    key_value_log.PARSER,  # last resort: console lines of named values, when no format of its own claims the file
)


def registry() -> tuple[type[LogParser], ...]:
    """The parser classes in detection order."""
    return PARSERS
