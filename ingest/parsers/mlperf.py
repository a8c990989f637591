"""MLPerf Training result files: `:::MLLOG {json}` events (optionally after a rank tag such as " 0: ",
mixed with warnings and shell output) and `:::SYSJSON {json}` system descriptions.

Time to train is what MLPerf defines it to be: run_stop.time_ms - run_start.time_ms, and only when run_stop's
status is "success". Every other figure computed from an MLPerf result is labelled evidence "derived" with
MLCommons' caveat (DERIVED_NOTE), since it is not an official MLPerf metric.

Training progress is not counted the same way in every benchmark: `tracked_stats` metadata carries `step`
(samples in llama2_70b_lora and llama31_8b, optimizer steps in llama31_405b, which also logs
`samples_count`), and gpt3 counts `trained_samples` / `epoch_num` in tokens. Steps here are optimizer steps
(samples consumed / global batch size) whenever the file lets us tell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import INT64_MAX, json_number, load_json, step_frame_from_columns, to_int
from ingest.parsers._mllog import (
    EVENT_SCHEMA,
    MLLOG,
    MllogChunk,
    StepState,
    event_columns,
    scanned_chunk,
    split_chunk,
    step_rows,
)
from ingest.parsers._mllog_blocks import BlockTimer
from ingest.parsers._mlperf_config import (
    CONFIG_LITERALS,
    Platform,
    banner_devices,
    banner_pairs,
    config_pairs,
    read_platform,
    shape_from_values,
)
from ingest.parsers.base import LogParser, epoch_date
from ingest.text import TextChunk
from perfledger.catalog import resolve_or_none
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps
from perfledger.vocabulary import Evidence, LogFormat, Metric, SourceKind, Workload

DERIVED_NOTE = "derived from an MLPerf result; not an official MLPerf metric (unverified)"

_SYSJSON = ":::SYSJSON "

# benchmark as printed -> (canonical model id, workload)
BENCHMARK_MODELS: dict[str, tuple[str, Workload]] = {
    "gpt3": ("gpt3-175b", Workload.PRETRAIN),
    "llama2_70b_lora": ("llama2-70b", Workload.LORA_FINETUNE),
    "llama31_8b": ("llama3-8b", Workload.PRETRAIN),
    "llama31_405b": ("llama3-405b", Workload.PRETRAIN),
}
TOKEN_COUNTED_BENCHMARKS = frozenset({"gpt3"})


def resolve_accelerator_or_none(name: str | None) -> str | None:
    """The catalog's canonical id for a printed accelerator name, or None when the catalog does not know it."""
    return resolve_or_none("accelerator", name)


def platform_nodes(platform: str | None) -> tuple[int | None, str | None]:
    """'64xNVIDIA DGX H100' -> (64, 'NVIDIA DGX H100'): MLPerf's platform prefix counts nodes, not devices."""
    read = read_platform(platform)
    return read.nodes, read.accelerator


def _event_json(line: str, marker: str) -> str | None:
    at = line.find(marker)
    return None if at < 0 else line[at + len(marker) :]


class MlperfParser(LogParser):
    format = LogFormat.MLPERF
    owning_marker = b":::MLLOG"
    bulk = True  # step events decoded by msgspec (False: every event through json.loads, the definition)
    scanned = True  # with bulk, chunks read by the compiled scanner where it is available

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return MLLOG + "{" in head or _SYSJSON + "{" in head

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.values: dict[str, Any] = {}
        self.sysjson: dict[str, Any] | None = None
        self.run_start_ms: float | None = None
        self.run_stop_ms: float | None = None
        self.run_stop_meta: dict[str, Any] = {}
        self.events = 0
        self.throughputs: list[float] = []  # a few per run (one per eval block), never per line
        self.last_eval_epoch: float | None = None
        self.state = StepState()
        self.dumped: dict[str, int] = {}  # model shape from a configuration dump, first value of each field
        self.banner: dict[str, int] = {}  # launcher settings printed around the events (NNODES=1, GPUS_PER_NODE=8)
        self.blocks = BlockTimer()  # block_start / block_stop: a step time where no step event gives one
        self.rows_stored = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        return self.feed_prepared(self.prepare(lines, first_lineno))

    def prepare(self, lines: Sequence[str], first_lineno: int) -> MllogChunk:
        return split_chunk(self.without_long_lines(lines, first_lineno), first_lineno, CONFIG_LITERALS, bulk=self.bulk)

    def prepare_chunk(self, chunk: TextChunk) -> MllogChunk:
        found = scanned_chunk(chunk.text, chunk.first_lineno, CONFIG_LITERALS) if self.bulk and self.scanned else None
        return found if found is not None else self.prepare(chunk.lines(), chunk.first_lineno)

    def feed_prepared(self, prepared: MllogChunk) -> pl.DataFrame:
        """The chunk's other `:::` lines in order through json.loads, then its step events as columns."""
        gbs_from, seq_from = self._known_from(self._gbs()), self._known_from(self._seq())
        slow: list[dict[str, Any]] = []
        for i, line in prepared.other:
            lineno = prepared.first_lineno + i
            if (text := _event_json(line, MLLOG)) is not None:
                event = self._load(text, lineno)
                if event is not None:
                    self.events += 1
                    self._event(event, i, slow)
                    gbs_from = gbs_from if gbs_from is not None or self._gbs() is None else i
                    seq_from = seq_from if seq_from is not None or self._seq() is None else i
            elif (text := _event_json(line, _SYSJSON)) is not None:
                if self.sysjson is None and (loaded := self._load(text, lineno)) is not None:
                    self.sysjson = loaded
            elif ":::" not in line:
                for field, value in config_pairs(line):
                    self.dumped.setdefault(field, value)
                for field, value in banner_pairs(line):
                    self.banner.setdefault(field, value)
                seq_from = seq_from if seq_from is not None or self._seq() is None else i
        self.events += prepared.events.height
        events = prepared.events
        if slow:
            events = pl.concat([events, pl.DataFrame(slow, schema=EVENT_SCHEMA)]).sort("i")
        if events.is_empty():
            return empty_steps()
        rows, throughputs = step_rows(events, self.state, _from(gbs_from, self._gbs()), _from(seq_from, self._seq()),
                                      self._devices())
        self.throughputs.extend(throughputs.to_list())
        self.rows_stored += rows.height
        return step_frame_from_columns(rows.to_dict(), rows.height)

    def final_steps(self) -> pl.DataFrame:
        """The blocks' rows, for a file whose events gave no step (else the steps are the events')."""
        return self.blocks.frame() if self.rows_stored == 0 and self.blocks.rows else empty_steps()

    @staticmethod
    def _known_from(value: int | None) -> int | None:
        return -1 if value is not None else None

    def _load(self, text: str, lineno: int) -> dict[str, Any] | None:
        try:
            loaded = load_json(text)
        except ValueError:
            self.problem(lineno, "MLLOG event is not valid JSON (cut off or interleaved with another rank)")
            return None
        if not isinstance(loaded, dict):
            self.problem(lineno, "MLLOG event is not a JSON object")
            return None
        return loaded

    def _event(self, event: dict[str, Any], i: int, steps: list[dict[str, Any]]) -> None:
        key = event.get("key")
        found = event.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        value = event.get("value")
        time_ms = json_number(event.get("time_ms"))
        if time_ms is not None and self.started_at is None:
            self.saw_time(epoch_date(time_ms / 1000.0))
        if key == "run_start":
            if self.run_start_ms is None:
                self.run_start_ms = time_ms
        elif key == "run_stop":
            self.run_stop_ms, self.run_stop_meta = time_ms, meta
        elif key == "block_start":
            self.blocks.start(time_ms, meta)
        elif key == "block_stop":
            self.blocks.stop(time_ms, meta, self._gbs())
        elif key == "tracked_stats" and isinstance(value, dict) or key == "train_loss":
            steps.append(event_columns(i, key, value, meta))
        elif key == "eval_accuracy":
            self.values["eval_accuracy"] = value
            epoch = json_number(meta.get("epoch_num"))
            self.last_eval_epoch = epoch if epoch is not None else self.last_eval_epoch
        elif isinstance(key, str) and key not in self.values:
            self.values[key] = None if isinstance(value, str) and "PLACEHOLDER" in value else value

    def _gbs(self) -> int | None:
        gbs = self.values.get("global_batch_size")
        return gbs if isinstance(gbs, int) and 0 < gbs <= INT64_MAX else None

    def _seq(self) -> int | None:
        return self._shape().get("seq_len")

    def _shape(self) -> dict[str, int]:
        """Model shape fields (seq_len too): MLLOG keys first, then a configuration dump."""
        return shape_from_values(self.values) | {k: v for k, v in self.dumped.items()
                                                 if k not in shape_from_values(self.values)}

    def _platform(self) -> Platform:
        return read_platform(_str_or_none(self.values.get("submission_platform")))

    def _devices(self) -> int | None:
        """Nodes x accelerators per node from the system description, else from submission_platform."""
        sysjson = self.sysjson or {}
        per_node, nodes = to_int(sysjson.get("accelerators_per_node")), to_int(sysjson.get("number_of_nodes"))
        if nodes and per_node and nodes * per_node <= INT64_MAX:
            return nodes * per_node
        return self._platform().devices or self._banner_devices()

    def _banner_devices(self) -> int | None:
        return banner_devices(self.banner)

    def finish(self) -> ParseSummary:
        if self.events == 0 and self.sysjson is None:
            raise ParseError(self.file_name, None, "no :::MLLOG events found")
        config = self._config()
        warnings: list[str] = []
        results: list[ResultRecord] = []
        ttt = self._time_to_train(warnings)
        if ttt is not None:
            results.append(self._record(config, Metric.TIME_TO_TRAIN_S, ttt, Evidence.MEASURED, "run_stop - run_start"))
            results.extend(self._derived_token_rates(config, ttt))
        if "submission_platform" in self.values and self.values["submission_platform"] is None:
            warnings.append("submission_platform is a template placeholder: the accelerator is not stated")
        if self.throughputs:
            mean = sum(self.throughputs) / len(self.throughputs)
            note = f"mean of {len(self.throughputs)} tracked_stats throughput values (samples/s, as logged)"
            results.append(self._record(config, Metric.SAMPLES_PER_S, mean, Evidence.MEASURED, note))
        if self.throughputs and not self.state.saw_step_time:
            warnings.append(
                "step_time_s of the throughput rows is global_batch_size / logged throughput, averaged over the "
                "steps between two logs"
            )
        warnings.extend(self._notes(config))
        if self.rows_stored == 0 and self.blocks.rows:
            warnings.append(f"step time is each of {len(self.blocks.rows):,} blocks' time (block_start to block_stop) "
                            "over its steps: the file logs no per-step figure")
        if self.blocks.backwards:
            warnings.append(f"{self.blocks.backwards} block(s) stopped before they started (a clock that stepped "
                            "back): no step time taken from them")
        return ParseSummary(
            format=self.format,
            config=config,
            problems=tuple(self.problems),
            warnings=tuple(warnings),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta=self._meta(ttt),
        )

    def _notes(self, config: RunConfig) -> list[str]:
        out = []
        if self.state.block_rows:
            out.append(f"{self.state.block_rows} block-average rows (a step time over a block of steps already "
                       "stored, or logged at a step number that does not advance) were not stored as steps")
        if self.throughputs and config.n_devices and config.seq_len:
            out.append("reported_tokens_per_s_per_device is the logged throughput (samples/s) x seq len / devices, "
                       f"{DERIVED_NOTE}")
        if config.n_devices and not self.sysjson and self._platform().devices:
            how = "the count it names" if self._platform().total else "nodes x accelerators per node"
            out.append(f"the device count ({config.n_devices}) is read from submission_platform "
                       f"{self.values.get('submission_platform')!r}: {how}")
        elif config.n_devices and not self.sysjson and self._banner_devices():
            said = ", ".join(f"{k}={v}" for k, v in sorted(self.banner.items()))
            out.append(f"the device count ({config.n_devices}) is read from the launcher's settings ({said})")
        return out

    def _time_to_train(self, warnings: list[str]) -> float | None:
        if self.run_stop_ms is None:
            warnings.append("no run_stop event found (file cut short?): no time-to-train result")
            return None
        if self.run_start_ms is None:
            warnings.append("no run_start event found: no time-to-train result")
            return None
        status = self.run_stop_meta.get("status")
        if status != "success":
            warnings.append(f"run_stop status is {status!r}, not 'success': not a valid MLPerf result")
            return None
        took = (self.run_stop_ms - self.run_start_ms) / 1000.0
        if took <= 0:  # a clock that stepped back (or none that moved): never a measured time to train
            warnings.append(f"run_stop is at or before run_start ({took:+,.3f} s: a clock that stepped back?): "
                            "no time-to-train result")
            return None
        return took

    def _trained_tokens(self) -> float | None:
        if self.values.get("submission_benchmark") in TOKEN_COUNTED_BENCHMARKS:
            trained = json_number(self.values.get("trained_samples"))
            return trained if trained is not None else self.last_eval_epoch
        samples, seq = json_number(self.run_stop_meta.get("samples_count")), self._seq()
        return samples * seq if samples is not None and seq else None

    def _derived_token_rates(self, config: RunConfig, ttt: float) -> list[ResultRecord]:
        tokens = self._trained_tokens()
        if tokens is None or ttt <= 0:
            return []
        note = f"{DERIVED_NOTE}; trained tokens {tokens:.0f} / time to train"
        out = [self._record(config, Metric.TOKENS_PER_S, tokens / ttt, Evidence.DERIVED, note)]
        if config.n_devices:
            per_device = tokens / ttt / config.n_devices
            out.append(self._record(config, Metric.TOKENS_PER_S_PER_DEVICE, per_device, Evidence.DERIVED, note))
        return out

    def _record(self, config: RunConfig, metric: Metric, value: float, evidence: Evidence, note: str) -> ResultRecord:
        return ResultRecord(
            metric=metric.value,
            value=value,
            unit=metric.unit,
            accelerator_id=config.accelerator,
            accelerator_as_printed=config.accelerator_as_printed,
            n_devices=config.n_devices,
            framework=config.framework,
            model_id=config.model,
            model_as_printed=config.model_as_printed,
            workload=config.workload,
            precision=config.precision,
            seq_len=config.seq_len,
            global_batch=config.global_batch,
            grad_accum=config.grad_accum,
            evidence=evidence.value,
            locator=self.file_name,
            note=note,
        )

    def _config(self) -> RunConfig:
        benchmark = self.values.get("submission_benchmark")
        model, workload = BENCHMARK_MODELS.get(str(benchmark), (None, None))
        sysjson = self.sysjson or {}
        accelerator = _str_or_none(sysjson.get("accelerator_model_name")) or self._platform().accelerator
        ga = self.values.get("gradient_accumulation_steps")
        precision = _str_or_none(self.values.get("precision"))
        shape = self._shape()
        heads = shape.get("num_attention_heads")
        return RunConfig(
            model=model or _str_or_none(benchmark),
            model_as_printed=_str_or_none(benchmark),
            accelerator=resolve_accelerator_or_none(accelerator),
            accelerator_as_printed=accelerator,
            n_devices=self._devices(),
            precision=precision.lower() if precision else None,
            seq_len=shape.get("seq_len"),
            global_batch=self._gbs(),
            grad_accum=ga if isinstance(ga, int) else None,
            framework=_str_or_none(sysjson.get("framework")),
            workload=workload.value if workload else None,
            num_layers=shape.get("num_layers"),
            hidden_size=shape.get("hidden_size"),
            ffn_hidden_size=shape.get("ffn_hidden_size"),
            num_attention_heads=heads,
            num_kv_heads=shape.get("num_kv_heads") or heads,
            vocab_size=shape.get("vocab_size"),
        )

    def _meta(self, ttt: float | None) -> dict[str, Any]:
        platform = self._platform()
        keep = ("submission_org", "submission_platform", "submission_division", "submission_status", "seed")
        meta: dict[str, Any] = {k: self.values[k] for k in keep if k in self.values}
        meta["source_kind"] = SourceKind.MLPERF.value
        meta["n_nodes"] = to_int((self.sysjson or {}).get("number_of_nodes")) or platform.nodes
        meta["mllog_events"] = self.events
        meta["step_time_source"] = {"block": len(self.blocks.rows)} if self.rows_stored == 0 and self.blocks.rows \
            else {"logged" if self.state.saw_step_time else "rate": 0}
        if ttt is not None:  # MLPerf's own figure: what the run is judged by
            meta["headline"] = {"metric": Metric.TIME_TO_TRAIN_S.value, "value": ttt, "unit": Metric.TIME_TO_TRAIN_S.unit}
        if self.sysjson:
            meta["system_name"] = self.sysjson.get("system_name")
        elif platform.system:
            meta["system_name"] = platform.system
        if self.state.block_rows:
            meta["block_average_rows"] = self.state.block_rows
        if "eval_accuracy" in self.values:
            meta["last_eval_accuracy"] = self.values["eval_accuracy"]
        return meta


def _from(index: int | None, value: int | None) -> pl.Expr:
    """A value known from line position `index` on (null before it, and everywhere when never known)."""
    if index is None or value is None:
        return pl.lit(None, dtype=pl.Int64)
    return pl.when(pl.col("i") > index).then(pl.lit(value, dtype=pl.Int64))


def _str_or_none(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


PARSER = MlperfParser
