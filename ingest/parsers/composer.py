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

The names are Composer's own (the ones it sends to W&B), read through the key vocabulary (data/metric_keys.csv) by the structured-metrics reader: step time is
1 / throughput/batches_per_sec, or wall clock from `time/train` (hours) between two printed batches; tokens and
samples per step from the cumulative `time/token` and `time/sample`; the printed tokens/s/device, FLOP/s and MFU go
to the reported_* columns. The start-up `Config:` block gives the device count (num_nodes x num_gpus_per_node), the
`Using precision` line the precision, Composer's "gpu_flop count not found for <gpu>" warning the accelerator.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import polars as pl

from ingest.parsers._common import NUM, grad_accum, precision_from_name, to_int
from ingest.parsers._records import Anchor, StepRecords
from ingest.parsers.base import LogParser
from ingest.text import TextChunk
from perfledger.errors import ParseError
from perfledger.metric_keys import Vocabulary
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

_TAG = r"^\s*(?:\d+:\s*)?"
_INLINE = re.compile(r"(?:Train )?([\w./()%-]+): (" + NUM + r")(?=\s|$)")
_CONFIG = re.compile(_TAG + r"(num_gpus_per_node|num_nodes|composer_version|composer_commit_hash): (\S+)\s*$")
_PRECISION = re.compile(r"Using precision Precision\.(\w+)")
_NO_PEAK = re.compile(r"gpu_flop count not found for (.+?) with precision=")
_SNIFF = re.compile(_TAG + r"(?:\[epoch=\d+\])?\[batch=\d+(?:/\d+)?\]:", re.MULTILINE)
_CLAIM_ITEM = re.compile(_TAG + r"Train (?:time|throughput|loss|trainer|memory|lr-)\S*: ")
_BATCH = re.compile(r"\[batch=(\d+)(?:/\d+)?\]:(.*)$")
_START = Anchor(step=0, elapsed_s=0.0, tokens_total=0.0, samples_total=0.0)  # batch 0: no time, no tokens yet


@functools.lru_cache(maxsize=4)
def _scan_pattern(vocabulary: Vocabulary) -> str:
    """One scan of a chunk's text (Polars' Rust regex, on a reader thread) finds the batch headers and the items
    with a name the vocabulary reads; the other items, often most lines (per-layer norms, images), fail at their
    name, so Python sees a dozen matches per batch, not every line."""
    # Composer's item names hold no space ("Train <name>: <value>"); leaving the vocabulary's spaced names out of the
    # alternation halves the scan's time
    names = sorted({re.escape(row.key).replace(r"\*", r"[^\s:]+") for row in vocabulary.rows if " " not in row.key},
                   key=len, reverse=True)
    return r"Train (?:" + "|".join(names) + r"): [^\n]*|\[batch=[^\n]*"


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
        self.block: dict[str, str] | None = None  # the batch being read: its number ("_step") and printed metrics
        self.records = StepRecords(anchor=_START)
        self.steps = 0
        self.config: dict[str, str] = {}
        self.counters: list[tuple[float, ...]] = []  # first and last (batch, time/sample, time/token) printed
        self.pending = empty_steps()

    def prepare(self, lines: Sequence[str], first_lineno: int) -> tuple[list[str], str]:
        return self._scan("\n".join(lines))

    def prepare_chunk(self, chunk: TextChunk) -> tuple[list[str], str]:
        return self._scan(chunk.text)

    def _scan(self, text: str) -> tuple[list[str], str]:
        """(the chunk's headers and known items, in order; its text before the first header)."""
        pattern = _scan_pattern(self.records.vocabulary)
        matches = pl.Series([text], dtype=pl.String).str.extract_all(pattern)[0]
        first = text.find("[batch=")
        return (matches.to_list() if matches is not None else []), (text if first < 0 else text[:first])

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        return self.feed_prepared(self.prepare(lines, first_lineno))

    def feed_prepared(self, prepared: tuple[list[str], str]) -> pl.DataFrame:
        matches, before = prepared
        if self.block is None and self.steps == 0:  # no batch yet: the start-up lines
            for line in before.split("\n"):
                self._start_up(line)
        done: list[dict[str, str]] = []
        block = self.block
        for match in matches:
            if match.startswith("Train "):
                if block is not None:
                    key, _, value = match[6:].partition(": ")
                    block[key] = value.strip()
            elif (m := _BATCH.match(match)) is not None:
                if block is not None:
                    done.append(block)
                block = {"_step": m.group(1)}
                if rest := m.group(2).strip():
                    block.update((k, v) for k, v in _INLINE.findall(rest) if self.records.known(k))
        self.block = block
        return self._steps(done)

    def _start_up(self, line: str) -> None:
        if (m := _CONFIG.match(line)) is not None:
            self.config.setdefault(m.group(1), m.group(2))
        elif "Using precision" in line and (m := _PRECISION.search(line)) is not None:
            self.config.setdefault("precision", m.group(1))
        elif "gpu_flop count not found" in line and (m := _NO_PEAK.search(line)) is not None:
            self.config.setdefault("gpu", m.group(1).strip())

    def _steps(self, blocks: list[dict[str, str]]) -> pl.DataFrame:
        if not blocks:
            return empty_steps()
        names = sorted({k for b in blocks for k in b})
        frame = pl.DataFrame({n: [b.get(n) for b in blocks] for n in names}, schema={n: pl.String for n in names})
        self._remember(frame)
        steps = self.records.steps(frame)
        self.steps += steps.height
        return steps

    def _remember(self, frame: pl.DataFrame) -> None:
        if not {"time/sample", "time/token"} <= set(frame.columns):
            return
        counted = frame.select(pl.col("_step", "time/sample", "time/token").cast(pl.Float64, strict=False)).drop_nulls()
        if counted.height:
            ends = [counted.row(0), counted.row(counted.height - 1)]
            self.counters = [self.counters[0] if self.counters else ends[0], ends[1]]

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
            micro_batch=self.records.micro_batch,
            grad_accum=grad_accum(global_batch, self.records.micro_batch, devices),
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
