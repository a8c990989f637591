"""Registry of parsers in detection order: first whose `sniff(head)` is true wins.

MLPerf comes first because MLPerf runs on Megatron/NeMo print both kinds of line; the JSON formats come
before the line formats because their heads are unambiguous; Megatron-DeepSpeed logs also print Megatron
iteration lines, so DeepSpeed is tried before Megatron.
"""

from __future__ import annotations

from ingest.parsers import (
    claims_csv,
    composer,
    deepspeed,
    dllogger,
    hf_results_json,
    hf_trainer_log,
    hf_trainer_state,
    key_value_log,
    llmc,
    maxtext,
    megatron,
    megatron_golden,
    metrics_file,
    microbench,
    mlperf,
    nanogpt,
    nemo,
    optimum_habana,
    tensorboard,
    torchtitan,
    wandb_history,
)
from ingest.parsers.base import LogParser

PARSERS: tuple[type[LogParser], ...] = (
    tensorboard.PARSER,  # binary: asked first, by its bytes (LogParser.sniff_bytes)
    mlperf.PARSER,
    microbench.PARSER,
    claims_csv.PARSER,
    megatron_golden.PARSER,
    dllogger.PARSER,
    hf_trainer_state.PARSER,
    hf_results_json.PARSER,
    optimum_habana.PARSER,
    deepspeed.PARSER,
    nemo.PARSER,
    torchtitan.PARSER,
    megatron.PARSER,
    hf_trainer_log.PARSER,
    nanogpt.PARSER,
    llmc.PARSER,
    maxtext.PARSER,
    wandb_history.PARSER,
    metrics_file.PARSER,  # any per-step metrics file the key vocabulary reads: after every format of its own
    composer.PARSER,
    key_value_log.PARSER,  # last resort: lines of name: value pairs, when no format of its own claims the file
)


def registry() -> tuple[type[LogParser], ...]:
    """The parser classes in detection order."""
    return PARSERS
