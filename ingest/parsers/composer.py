"""Composer / llm-foundry console logs (Composer's ConsoleLogger): a `[batch=10/100]:` line (`[epoch=1][batch=5/5]:`
in epoch runs, a `0: ` rank tag under srun), then one `Train <name>: <value>` line per logged metric:

    [batch=20/20]:
             Train time/batch: 19
             Train time/token: 38912
             Train loss/train/total: 0.0051
             Train throughput/batches_per_sec: 0.1085
             Train throughput/device/tokens_per_sec: 222.2194
             Train throughput/device/mfu: 0.4132
             Train time/train: 0.0536

The names are Composer's own (the ones it sends to W&B), read through ingest/parsers/_metric_keys.py: step time is
1 / throughput/batches_per_sec, or wall clock from `time/train` (hours) between two printed batches; tokens and
samples per step from the cumulative `time/token` and `time/sample`; the printed tokens/s/device, FLOP/s and MFU go
to the reported_* columns. The start-up `Config:` block gives the device count (num_nodes x num_gpus_per_node), the
`Using precision` line the precision, Composer's "gpu_flop count not found for <gpu>" warning the accelerator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import NUM, grad_accum, precision_from_name, to_float, to_int
from ingest.parsers._metric_keys import MICRO_BATCH, Anchor, is_known, steps_from_metrics
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

_TAG = r"^\s*(?:\d+:\s*)?"
_HEADER = re.compile(_TAG + r"(?:\[epoch=\d+\])?\[batch=(\d+)(?:/\d+)?\]:(?P<rest>.*)$")
_ITEM = re.compile(_TAG + r"Train (\S+): (" + NUM + r")\s*$")
_INLINE = re.compile(r"(?:Train )?([\w./()%-]+): (" + NUM + r")(?=\s|$)")
_CONFIG = re.compile(_TAG + r"(num_gpus_per_node|num_nodes|composer_version|composer_commit_hash): (\S+)\s*$")
_PRECISION = re.compile(r"Using precision Precision\.(\w+)")
_NO_PEAK = re.compile(r"gpu_flop count not found for (.+?) with precision=")
_SNIFF = re.compile(_TAG + r"(?:\[epoch=\d+\])?\[batch=\d+(?:/\d+)?\]:", re.MULTILINE)
_CLAIM_ITEM = re.compile(_TAG + r"Train (?:time|throughput|loss|trainer|memory|lr-)\S*: ")
_START = Anchor(step=0, runtime_s=0.0, tokens=0.0, samples=0.0)  # training starts at batch 0, no time, no tokens


class ComposerParser(LogParser):
    format = LogFormat.COMPOSER

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return _SNIFF.search(head) is not None

    @classmethod
    def claims(cls, line: str) -> bool:
        return _SNIFF.match(line) is not None or _CLAIM_ITEM.match(line) is not None

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.block: dict[str, Any] | None = None  # the batch being read: its printed metrics
        self.anchor = _START
        self.steps = 0
        self.config: dict[str, str] = {}
        self.counters: list[tuple[float, float, float]] = []  # (batch, time/sample, time/token) as printed
        self.micro_batch: int | None = None
        self.pending = empty_steps()

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        done: list[dict[str, Any]] = []
        for line in lines:
            if "Train " in line and self.block is not None and (m := _ITEM.match(line)) is not None:
                if is_known(m.group(1)):
                    self.block[m.group(1)] = m.group(2)
            elif "[batch=" in line and (m := _HEADER.match(line)) is not None:
                if self.block is not None:
                    done.append(self.block)
                self.block = {"_step": m.group(1)}
                self.block.update((k, v) for k, v in _INLINE.findall(m.group("rest")) if is_known(k))
            elif self.block is None and self.steps == 0:
                self._start_up(line)
        return self._steps(done)

    def _start_up(self, line: str) -> None:
        if (m := _CONFIG.match(line)) is not None:
            self.config.setdefault(m.group(1), m.group(2))
        elif "Using precision" in line and (m := _PRECISION.search(line)) is not None:
            self.config.setdefault("precision", m.group(1))
        elif "gpu_flop count not found" in line and (m := _NO_PEAK.search(line)) is not None:
            self.config.setdefault("gpu", m.group(1).strip())

    def _steps(self, blocks: list[dict[str, Any]]) -> pl.DataFrame:
        if not blocks:
            return empty_steps()
        names = sorted({k for b in blocks for k in b})
        frame = pl.DataFrame({n: [b.get(n) for b in blocks] for n in names}, schema={n: pl.String for n in names})
        for b in blocks:
            self._remember(b)
        steps, self.anchor = steps_from_metrics(frame, self.anchor)
        self.steps += steps.height
        return steps

    def _remember(self, block: dict[str, Any]) -> None:
        if self.micro_batch is None and MICRO_BATCH in block:
            self.micro_batch = to_int(block[MICRO_BATCH])
        values = (to_float(block.get("_step")), to_float(block.get("time/sample")), to_float(block.get("time/token")))
        if all(v is not None for v in values):
            self.counters.append(values)  # type: ignore[arg-type]

    def final_steps(self) -> pl.DataFrame:
        return self.pending

    def finish(self) -> ParseSummary:
        if self.block is not None:  # the last batch printed: no header follows it
            self.pending = self._steps([self.block])
            self.block = None
        if self.steps == 0:
            raise ParseError(self.file_name, None, "no Composer batch blocks (`[batch=N/M]:` then `Train ...: value` "
                                                   "lines) found")
        return ParseSummary(format=self.format, config=self._run_config(), problems=tuple(self.problems),
                            warnings=tuple(self._warnings()), skipped_lines=self.skipped_lines,
                            meta={k: v for k, v in self.config.items() if k.startswith("composer_")})

    def _run_config(self) -> RunConfig:
        nodes, per_node = to_int(self.config.get("num_nodes")), to_int(self.config.get("num_gpus_per_node"))
        devices = nodes * per_node if nodes and per_node else None
        global_batch, seq_len = self._batch_shape()
        return RunConfig(
            accelerator_as_printed=self.config.get("gpu"),
            n_devices=devices,
            precision=precision_from_name(self.config.get("precision")),
            seq_len=seq_len,
            global_batch=global_batch,
            micro_batch=self.micro_batch,
            grad_accum=grad_accum(global_batch, self.micro_batch, devices),
            framework="composer",
            framework_version=self.config.get("composer_version"),
        )

    def _batch_shape(self) -> tuple[int | None, int | None]:
        """(samples per batch, tokens per sample) from the cumulative counters between the first and last
        printed batch, when they divide evenly."""
        if len(self.counters) < 2:
            return None, None
        (b0, s0, t0), (b1, s1, t1) = self.counters[0], self.counters[-1]
        batches, samples, tokens = b1 - b0, s1 - s0, t1 - t0
        batch = samples / batches if batches > 0 and samples > 0 and samples % batches == 0 else None
        seq = tokens / samples if samples > 0 and tokens > 0 and tokens % samples == 0 else None
        return (int(batch) if batch else None), (int(seq) if seq else None)

    def _warnings(self) -> list[str]:
        out = []
        if "num_nodes" not in self.config:
            out.append("Composer's `Config:` block (num_nodes, num_gpus_per_node) was not found: the device count "
                       "is unknown (pass --devices)")
        if "gpu" in self.config:
            out.append(f"Composer did not know the peak FLOPS of {self.config['gpu']}: the log prints no MFU")
        return out


PARSER = ComposerParser
