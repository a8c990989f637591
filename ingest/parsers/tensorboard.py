"""TensorBoard event files (`events.out.tfevents.*`), as Megatron-LM, NeMo, torchtitan and the HF Trainer write them.

The file is binary: TFRecord framing (read by _tfrecord.RecordReader), each payload one `Event` protobuf, read with
the `tensorboard` package's own `Event` message (no TensorFlow), imported on the first record that needs it. Where
the compiled walk (ingest/native/tfrecord_scan.c) is at hand, it reads the Events of the one common shape (a step
and simple_value scalars of the tags below) and stores them as _event would; the rest still comes here.

Scalars become step rows by their tag, through the key vocabulary (data/metric_keys.csv; TagTable): one row per
step, the tags of a step merged; a framework the vocabulary learns is read here too. The log's own throughput,
TFLOP/s and MFU go to the reported_* columns. Where no tag gives the step time, it is the difference of two steps'
event wall times over the steps between them; where no tag gives the batch, Megatron's `lm loss vs samples` copy
(its step is the samples consumed so far) gives the batch in force at each step, ramp-up included. Megatron also writes its arguments as text summaries
(`seq_length/text_summary`, ...): they give the run's configuration as its stdout argument dump would.
"""

from __future__ import annotations

import functools
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import polars as pl

from ingest import native
from ingest.parsers._common import (
    grad_accum,
    is_unset,
    precision_from_flags,
    run_config,
    step_frame_from_columns,
    to_bool,
    to_int,
)
from ingest.parsers._hf import summary_results
from ingest.parsers._tfrecord import MAX_RECORD_BYTES, RecordReader, Walk, is_event_file
from ingest.parsers.base import LogParser, epoch_date
from perfledger.errors import NoKnownNames, ParseError
from perfledger.metric_keys import STEP_COLUMNS, TEXT_UNITS, Vocabulary, load_vocabulary
from perfledger.records import STEP_SCHEMA, ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import Evidence, LogFormat

ROWS_PER_FRAME = 20_000
PENDING_STEPS = 256  # steps held open for tags still to come; the oldest half goes out past this

# HF Trainer's run summary, written once at the end -> the run's samples/s result (as trainer_state.json gives it)
_RUN_TAGS = {"train/train_samples_per_second": "train_samples_per_second", "train/train_runtime": "train_runtime"}
_VS_SAMPLES = " vs samples"
_CONSUMED = "_consumed"  # the compiled walk's column name for a `... vs samples` copy
_WALL = "_wall_s"  # a pending row's wall time: its step's first event's  # Megatron's copy of a scalar whose step is the samples consumed so far
_TEXT_SUFFIX = "/text_summary"
_ARGS = frozenset({
    "world_size", "seq_length", "global_batch_size", "micro_batch_size", "tensor_model_parallel_size",
    "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size", "data_parallel_size",
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "group_query_attention", "padded_vocab_size", "swiglu", "num_experts", "moe_router_topk", "bf16", "fp16", "fp8",
})
_DT_FLOAT, _DT_DOUBLE = 1, 2


@dataclass(frozen=True, eq=False)
class TagTable:
    """What this file's reader looks for, from the key vocabulary: each tag that fills a step column (its literal
    spelling, the first row of each), the frameworks tags identify, and the byte patterns of every tag to decode.

    A Summary.Value's tag on the wire: field 1, length-delimited (0x0a), its length, its bytes. A record holding none
    of the wanted tags is not decoded (histograms, images). Step tags first: the compiled walk stores those (its
    columns), and leaves a record naming any other to _event."""

    tags: dict[str, tuple[str, float]]
    vs_samples: tuple[str, ...]
    frameworks: dict[str, str]
    wanted: tuple[bytes, ...]
    pattern: re.Pattern[bytes]

    @property
    def columns(self) -> tuple[tuple[str, float], ...]:
        """What each of the first wanted tags fills: the step tags' columns, then the `... vs samples` copies'."""
        return (*self.tags.values(), *((_CONSUMED, 1.0) for _ in self.vs_samples))


@functools.lru_cache(maxsize=4)
def tag_table(vocabulary: Vocabulary) -> TagTable:
    tags: dict[str, tuple[str, float]] = {}
    frameworks: dict[str, str] = {}
    for row in vocabulary.exact_rows(STEP_COLUMNS):
        if row.unit in TEXT_UNITS or row.unit == "1/s" or row.key in tags:
            continue
        tags[row.key] = (row.column, row.factor)
    for row in vocabulary.rows:
        if row.identifies and row.key in tags:
            frameworks.setdefault(row.key, row.framework)
    vs_samples = tuple(tag + _VS_SAMPLES for tag, (column, _) in tags.items() if column == "loss")
    wanted = (*(tag.encode() for tag in tags), *(tag.encode() for tag in vs_samples),
              *(tag.encode() for tag in _RUN_TAGS), *((arg + _TEXT_SUFFIX).encode() for arg in sorted(_ARGS)))
    pattern = re.compile(b"|".join(re.escape(bytes([0x0A, len(t)]) + t) for t in sorted(wanted, key=len, reverse=True)))
    return TagTable(tags=tags, vs_samples=vs_samples, frameworks=frameworks, wanted=wanted, pattern=pattern)


class TensorBoardParser(LogParser):
    format = LogFormat.TENSORBOARD
    reads_bytes = True

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return False  # never text: see sniff_bytes

    @classmethod
    def sniff_bytes(cls, head: bytes, file_name: str) -> bool:
        return is_event_file(head)

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.steps = 0
        self.args: dict[str, str] = {}
        self.tags_used: Counter[str] = Counter()
        self.other_tags = 0
        self.run_figures: dict[str, float] = {}
        self._pending: dict[int, dict[str, float]] = {}
        self._out: list[dict[str, float]] = []
        self.table = tag_table(load_vocabulary())
        self._consumed: dict[float, float] = {}  # a loss value -> the samples consumed when it was logged (vs samples)
        self._last_samples: tuple[int, float] = (0, 0.0)  # (step, samples consumed) of the last step given samples
        self._last_wall: tuple[int, float] | None = None  # (step, wall time) of the last step flushed
        self.step_time_from_wall = 0
        self.samples_from_consumed = 0
        self._walked = bytearray(8 * len(self.table.columns))  # the compiled walk's count of each tag it stored (int64)
        self._reader = RecordReader(self.table.pattern, self.problem, self._walk())

    @property
    def records(self) -> int:
        return self._reader.records

    @property
    def other_records(self) -> int:
        return self._reader.other_records

    @property
    def skipped_bytes(self) -> int:
        return self._reader.skipped_bytes

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        raise ParseError(self.file_name, None, "a TensorBoard event file is binary; it is read with feed_stream")

    def feed_stream(self, stream: BinaryIO) -> Iterator[pl.DataFrame]:
        event, pending, out = self._event, self._pending, self._out
        try:
            for number, payload in self._reader.read(stream):
                if payload is not None:
                    event(number, payload)
                if len(pending) > PENDING_STEPS:
                    self._flush(PENDING_STEPS // 2)
                    if len(out) >= ROWS_PER_FRAME:
                        yield self._frame()
        finally:
            self._count_walked()
        self._flush(len(self._pending))
        if self._out:
            yield self._frame()

    def _walk(self) -> Walk | None:
        """The compiled walk bound to this parser's pending steps, or None (no compiler, PERFLEDGER_NATIVE=0)."""
        scanner = native.tfrecord_scan()
        if scanner is None:
            return None
        walk: Callable[..., tuple[int, int, int]] = scanner.walk
        return functools.partial(walk, self.table.wanted, self.table.columns, self._pending, self._consumed,
                                 PENDING_STEPS, MAX_RECORD_BYTES,
                                 self._walked)

    def _count_walked(self) -> None:
        tags = self.table.tags
        counts = struct.unpack(f"={len(self.table.columns)}q", self._walked)
        for tag, count in zip(tags, counts, strict=False):
            if count:
                self.tags_used[tag] += count
        self._walked[:] = bytes(len(self._walked))

    # ------------------------------------------------------------------------------------------- events

    def _event(self, number: int, payload: bytes) -> None:
        from_string, decode_error = _protobuf()
        try:
            event = from_string(payload)
        except decode_error as exc:
            self.problem(number, f"event record {number}: not a readable Event ({exc}); skipped")
            return
        step = event.step
        tags = self.table.tags
        for value in event.summary.value:  # empty unless the Event is a summary
            tag = value.tag
            mapped = tags.get(tag)
            if mapped is None:
                self._other(value, step)
                continue
            scalar = value.simple_value or _scalar(value)  # torch's writer: simple_value; TF2's: a 0-d tensor
            if scalar is None or step < 0:
                self.problem(number, f"event record {number}: tag {tag!r} at step {step}: "
                                     f"{'holds no scalar' if scalar is None else 'negative step'}; skipped")
                continue
            pending = self._pending
            row = pending.get(step)
            if row is None:
                row = pending[step] = {}
            row[mapped[0]] = scalar * mapped[1]
            if event.wall_time and _WALL not in row:
                row[_WALL] = event.wall_time
            self.tags_used[tag] += 1

    def _other(self, value: Any, step: int) -> None:
        tag = value.tag
        if tag.endswith(_VS_SAMPLES) and (scalar := value.simple_value or _scalar(value)) is not None:
            self._consumed[scalar] = float(step)
        elif tag.endswith(_TEXT_SUFFIX) and tag[:-len(_TEXT_SUFFIX)] in _ARGS:
            self._argument(tag[:-len(_TEXT_SUFFIX)], value)
        elif tag in _RUN_TAGS and (scalar := _scalar(value)) is not None:
            self.run_figures[_RUN_TAGS[tag]] = scalar
        else:
            self.other_tags += 1

    def _argument(self, name: str, value: Any) -> None:
        strings = value.tensor.string_val
        if strings:
            self.args[name] = strings[0][:200].decode("utf-8", "replace")

    def _flush(self, count: int) -> None:
        """The `count` oldest pending steps, made rows: tokens from the batch in force at that step (a `batch-size`
        tag, else the samples consumed between two `... vs samples` copies) and the sequence length, when known;
        step time from the wall times of two steps where no tag gives it."""
        seq_len = to_int(self.args.get("seq_length"))
        for step in list(self._pending)[:count]:
            row = self._pending.pop(step)
            wall = row.pop(_WALL, None)
            if "samples" not in row:
                self._samples_from_consumed(step, row)
            if seq_len and "samples" in row:
                row["tokens"] = row["samples"] * seq_len
            if "step_time_s" not in row and wall is not None and self._last_wall is not None:
                last_step, last_wall = self._last_wall
                if step > last_step and wall > last_wall:
                    row["step_time_s"] = (wall - last_wall) / (step - last_step)
                    self.step_time_from_wall += 1
            if wall is not None:
                self._last_wall = (step, wall)
                if self.started_at is None:  # the first step flushed: the run's earliest wall time
                    self.saw_time(epoch_date(wall))
            row["step"] = step
            self._out.append(row)

    def _samples_from_consumed(self, step: int, row: dict[str, float]) -> None:
        consumed = self._consumed.pop(row["loss"], None) if "loss" in row else None
        if consumed is None:
            return
        last_step, last_consumed = self._last_samples
        if step > last_step and consumed > last_consumed:
            row["samples"] = (consumed - last_consumed) / (step - last_step)
            self.samples_from_consumed += 1
        self._last_samples = (step, consumed)

    def _frame(self) -> pl.DataFrame:
        rows = self._out.copy()
        self._out.clear()
        self.steps += len(rows)
        present = set().union(*rows)
        columns = {name: pl.Series(name, [row.get(name) for row in rows], dtype=dtype)
                   for name, dtype in STEP_SCHEMA.items() if name in present}
        return step_frame_from_columns(columns, len(rows)) if rows else empty_steps()

    # ------------------------------------------------------------------------------------------- finish

    def finish(self) -> ParseSummary:
        if self.steps == 0:
            where = self.problems[0].line if self.problems else None
            raise NoKnownNames(self.file_name, where, f"no training scalars the key vocabulary knows ('lm loss', "
                                                    f"'train/loss', 'perf/step_time_seconds', ...) in "
                                                    f"{self.records:,} event records; add a tag with "
                                                    "`python -m perfledger keys add`")
        results = summary_results(self.run_figures, file_name=self.file_name, locator="train/train_samples_per_second",
                                  evidence=Evidence.MEASURED)
        return ParseSummary(format=self.format, config=self._config(), problems=tuple(self.problems),
                            warnings=tuple(self._warnings()), results=tuple(results), skipped_lines=self.skipped_lines,
                            meta=self._meta())

    def _config(self) -> RunConfig:
        arg = self.args.get
        ints = {k: to_int(v) for k, v in self.args.items() if not is_unset(v)}
        gbs, mbs, dp = ints.get("global_batch_size"), ints.get("micro_batch_size"), ints.get("data_parallel_size")
        experts = ints.get("num_experts")
        gqa = to_bool(arg("group_query_attention"))
        frameworks = self._frameworks()
        framework = min(frameworks) if len(frameworks) == 1 else None
        return run_config({
            "n_devices": ints.get("world_size"), "seq_len": ints.get("seq_length"), "global_batch": gbs,
            "micro_batch": mbs, "grad_accum": grad_accum(gbs, mbs, dp), "dp": dp,
            "tp": ints.get("tensor_model_parallel_size"), "pp": ints.get("pipeline_model_parallel_size"),
            "cp": ints.get("context_parallel_size"), "ep": ints.get("expert_model_parallel_size"),
            "precision": precision_from_flags(fp8=arg("fp8"), bf16=arg("bf16"), fp16=arg("fp16"))
            if self.args else None,
            "num_layers": ints.get("num_layers"), "hidden_size": ints.get("hidden_size"),
            "ffn_hidden_size": ints.get("ffn_hidden_size"), "num_attention_heads": ints.get("num_attention_heads"),
            "num_kv_heads": ints.get("num_query_groups") if gqa else ints.get("num_attention_heads"),
            "vocab_size": ints.get("padded_vocab_size"), "swiglu": to_bool(arg("swiglu")),
            "num_experts": experts, "moe_top_k": ints.get("moe_router_topk") if experts else None,
            "framework": framework,
        })

    def _warnings(self) -> list[str]:
        out = []
        if "memory/max_reserved(GiB)" in self.tags_used:
            out.append("memory_gb is torchtitan's max reserved GiB converted to GB (x 1.073741824)")
        if self.step_time_from_wall:
            out.append(f"step time of {self.step_time_from_wall:,} steps is wall clock from the event times, over "
                       "the steps between them (evaluation and checkpoints in between count)")
        if self.samples_from_consumed:
            out.append(f"samples per step of {self.samples_from_consumed:,} steps are the samples consumed between "
                       "two logged steps (Megatron's `... vs samples` scalars): the batch in force, ramp-up included")
        if self.skipped_bytes:
            out.append(f"the event file is damaged: its last {self.skipped_bytes:,} bytes were not read")
        if len(frameworks := self._frameworks()) > 1:
            out.append(f"the tags of several frameworks are in one file ({', '.join(sorted(frameworks))})")
        return out

    def _frameworks(self) -> set[str]:
        frameworks = self.table.frameworks
        return {frameworks[tag] for tag in self.tags_used if tag in frameworks}

    def _meta(self) -> dict[str, Any]:
        timed = sum(count for tag, count in self.tags_used.items() if self.table.tags[tag][0] == "step_time_s")
        sources = {"logged": timed, "wall": self.step_time_from_wall}
        return {"step_time_source": {k: v for k, v in sources.items() if v},
                "event_records": self.records, "tags_read": dict(sorted(self.tags_used.items())),
                "records_of_other_tags": self.other_records, "other_tag_values": self.other_tags}


@functools.cache
def _protobuf() -> tuple[Callable[[bytes], Any], type[Exception]]:
    """Event.FromString and protobuf's DecodeError: the package is imported on the first record decoded here (about
    0.15 s), not by every `python -m ingest` that only sniffs."""
    # protobuf and tensorboard (~0.15 s) load on the first record decoded, not with every sniff
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]
    from tensorboard.compat.proto import event_pb2  # type: ignore[import-untyped]

    return event_pb2.Event.FromString, DecodeError


def _scalar(value: Any) -> float | None:
    """The one number a scalar summary holds: simple_value (TF1 / torch writers) or a 0-d tensor (TF2 writers)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        return None
    tensor = value.tensor
    for numbers in (tensor.float_val, tensor.double_val, tensor.int64_val, tensor.int_val):
        if len(numbers) == 1:
            return float(numbers[0])
    content = tensor.tensor_content
    if tensor.dtype == _DT_FLOAT and len(content) == 4:
        return float(struct.unpack("<f", content)[0])
    if tensor.dtype == _DT_DOUBLE and len(content) == 8:
        return float(struct.unpack("<d", content)[0])
    return None


PARSER = TensorBoardParser
