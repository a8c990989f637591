"""DeepSpeed stdout: Megatron-DeepSpeed runs and plain DeepSpeed (DeepSpeed-Chat) runs.

Megatron-DeepSpeed logs print both DeepSpeed's ``[Rank 0] step=N`` lines and Megatron ``iteration N/ M`` lines;
the Megatron lines carry the step time, batch and loss, so they make the step rows (read by the Megatron
parser's code) and the DeepSpeed lines are ignored. A log with no Megatron argument dump or iteration line is
read from DeepSpeed's own lines: ``[Rank 0] step=N, skipped=S, lr=[...]`` then the throughput timer line
``... global_step=N, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=..., MemAllocated=..GB, MaxMemAllocated=..GB``.
There, step time = global batch / CurrSamplesPerSec when the global batch is stated (DeepSpeed's timer divides
the *global* batch by the step time), else the time between two logged steps divided by the steps between them.

DeepSpeed-Chat step 3 (RLHF, PPO with the hybrid engine) prints one line per PPO step,
``|E2E latency=3.73s |Gather latency=.. |Generate time=2.78s (74.61%) |Training time=0.74s (19.84%) |Others=..
|CurSamplesPerSec=17.17 |AvgSamplesPerSec=..``, after the step's ``epoch: E|step: N|...`` line. Those lines make
the step rows then: step time = the E2E latency, generation_s and training_s its printed parts, samples =
CurSamplesPerSec x latency rounded (the hybrid engine divides the generation batch over all devices by the
latency), tokens = samples x (max_prompt_seq_len + max_answer_seq_len), the padded lengths DeepSpeed-Chat's own
throughput counts. The engines' timer lines then time only their training and are not step rows.

DeepSpeed's flops profiler summary, in either kind of log, gives the log's own TFLOP/s per GPU of the one step it
profiled (ingest.parsers._ds_profiler), kept as a reported result.

DeepSpeed numbers every optimizer step, applied or skipped: on an fp16 overflow it skips the update but still
counts the step (in step 3, 10 PPO steps with 4 overflows print ``step=10, skipped=4``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from ingest.parsers._common import NUM, concat_steps, run_config, to_float, to_int
from ingest.parsers._ds_profiler import MARKER as PROFILER_MARKER
from ingest.parsers._ds_profiler import FlopsProfile
from ingest.parsers._dschat import RlhfSteps, prompt_and_answer
from ingest.parsers.base import LogParser
from ingest.parsers.megatron import MegatronParser
from ingest.parsers.megatron.fields import _LAUNCH
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps, steps_frame
from perfledger.vocabulary import LogFormat

_DS_MARKER = re.compile(
    r"\[Rank 0\] step=\d+|DeepSpeed info: version=|deepspeed info \.{2,}|deepspeed\.launcher|SamplesPerSec="
    r"|(?:^|\] )cmd = \S*deepspeed", re.MULTILINE)
_MEGATRON_MARKER = re.compile(r"-- arguments --|using world size:|elapsed time per iteration \(ms\)")
_DSCHAT_MARKER = re.compile(r"SamplesPerSec=|(?:^|\] )cmd = \S*deepspeed", re.MULTILINE)
_CMD = re.compile(r"(?:^|\] )cmd = ")  # the launcher's command, alone or after its logger's prefix

_TIMESTAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d+)\]")
_STEP_LINE = re.compile(rf"\[Rank 0\] step=(\d+), skipped=(\d+), lr=\[({NUM})")
_TIMER = re.compile(
    rf"(?:global_step=(\d+)|\] \d+/(\d+)),\s*RunningAvgSamplesPerSec=({NUM}),\s*CurrSamplesPerSec=({NUM})"
    rf"(?:,\s*MemAllocated=({NUM})GB,\s*MaxMemAllocated=({NUM})GB)?"
)
_CMD_FLAG = re.compile(r"--([a-z_]+)[ =]([^\s-]\S*)")
_EPOCH_LOSS = re.compile(rf"^Epoch (\d+)/(\d+) with loss ({NUM})")
_PPL = re.compile(rf"^ppl: ({NUM})")
_EXIT = re.compile(r"Process (\d+) exits successfully")
_E2E = re.compile(rf"\|E2E latency=({NUM})s .*?\|Generate time=({NUM})s .*?\|Training time=({NUM})s .*?"
                  rf"\|CurSamplesPerSec=({NUM})")
_PPO_STEP = re.compile(r"^epoch: (\d+)\|step: (\d+)\|")


class DeepSpeedParser(MegatronParser):
    format = LogFormat.DEEPSPEED

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        # A DeepSpeed marker alone also fits HF Trainer + DeepSpeed logs, which the console reader reads better.
        return bool(_DS_MARKER.search(head)) and bool(
            _MEGATRON_MARKER.search(head) or _DSCHAT_MARKER.search(head))


    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._megatron = False
        self._cmd: dict[str, str] = {}
        self._pending: dict[str, Any] | None = None
        self._last_logged: tuple[int, datetime] | None = None
        self._ds_rows = 0
        self._ds_max_step: int | None = None
        self._ds_duplicates = 0
        self._epoch_losses: list[float] = []
        self._ppl: list[float] = []
        self._exits: set[int] = set()
        self._skipped_optimizer_steps = 0
        self._running_avg: float | None = None
        self._skipped_by_engine: list[int] = []  # the last printed skip count of each engine (two in RLHF)
        self._engine_step: tuple[int, int] | None = None  # (step, engine index) of the last `step=` line
        self._rlhf = RlhfSteps()
        self._profile = FlopsProfile()

    # Whether a chunk is Megatron's or DeepSpeed's own is decided here, with state: no read-ahead split.
    chunk_bytes = LogParser.chunk_bytes
    prepare = LogParser.prepare
    prepare_chunk = LogParser.prepare_chunk
    feed_prepared = LogParser.feed_prepared

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        if not lines:
            return empty_steps()
        text = pl.Series("line", lines, dtype=pl.String)
        if text.str.contains(PROFILER_MARKER, literal=True).any():
            self._profile.feed(lines, first_lineno)
        if not self._megatron and (text.str.contains(_LAUNCH).any()
                                   or text.str.contains("elapsed time per iteration", literal=True).any()):
            self._megatron = True
        megatron_steps = super().feed(lines, first_lineno)
        if self._megatron:
            return megatron_steps
        if not self._rlhf.seen and text.str.contains("|E2E latency=", literal=True).any():
            self._rlhf.seen = True  # before any row of this chunk: the engines' timer lines are then no step rows
        wanted = text.str.contains(r"step=|SamplesPerSec=|(?:^|\] )cmd = |^Epoch \d+/\d+ with loss|^ppl: |exits successfully"
                                   r"|^epoch: \d+\|step: ")
        rows = [row for line in text.filter(wanted).to_list() if (row := self._ds_line(line)) is not None]
        return concat_steps([megatron_steps, steps_frame(rows)])

    def _ds_line(self, line: str) -> dict[str, Any] | None:
        if (found := _CMD.search(line)) is not None and not self._cmd:
            self._cmd.update({m.group(1): m.group(2) for m in _CMD_FLAG.finditer(line, found.end())})
        elif (m := _E2E.search(line)) is not None:
            return self._rlhf.row(m, to_int(self._cmd.get("per_device_generation_batch_size")),
                                  prompt_and_answer(self._cmd))
        elif (m := _PPO_STEP.match(line)) is not None:
            self._rlhf.step_line(to_int(m.group(1)), to_int(m.group(2)))
        elif (m := _STEP_LINE.search(line)) is not None:
            step = to_int(m.group(1))
            if step is None:
                return None  # past 64 bits: the line's timer row then has no pending step and is skipped
            self._pending = {"step": step, "lr": to_float(m.group(3)), "time": _timestamp(line)}
            self._count_skipped(step, to_int(m.group(2)) or 0)
        elif (m := _TIMER.search(line)) is not None:
            return None if self._rlhf.seen else self._timer_row(m)
        elif (m := _EPOCH_LOSS.search(line)) is not None:
            self._epoch_losses.extend(x for x in (to_float(m.group(3)),) if x is not None)
        elif (m := _PPL.search(line)) is not None:
            self._ppl.extend(x for x in (to_float(m.group(1)),) if x is not None)
        elif (m := _EXIT.search(line)) is not None:
            self._exits.add(to_int(m.group(1)) or 0)
        return None

    def _count_skipped(self, step: int, skipped: int) -> None:
        """Each engine prints its own `step=N, skipped=S` line (RLHF: the actor's, then the critic's, same N)."""
        engine = self._engine_step[1] + 1 if self._engine_step and self._engine_step[0] == step else 0
        self._engine_step = (step, engine)
        if engine >= len(self._skipped_by_engine):
            self._skipped_by_engine.append(skipped)
        else:
            self._skipped_by_engine[engine] = skipped
        self._skipped_optimizer_steps = max(self._skipped_by_engine)

    def _timer_row(self, m: re.Match[str]) -> dict[str, Any] | None:
        pending, self._pending = self._pending, None
        step = to_int(m.group(1) or m.group(2)) or (pending["step"] if pending else None)
        if step is None:
            return None
        if self._ds_max_step is not None and step <= self._ds_max_step:
            self._ds_duplicates += 1
            return None
        self._ds_max_step = step
        self._running_avg = to_float(m.group(3))
        gbs = self._global_batch()
        curr = to_float(m.group(4))
        when = pending["time"] if pending else None
        step_time = gbs / curr if gbs and curr else self._time_per_step(step, when)
        if when is not None:
            self._last_logged = (step, when)
        self._ds_rows += 1
        seq = to_int(self._cmd.get("max_seq_len"))
        return {
            "step": step,
            "step_time_s": step_time,
            "samples": gbs,
            "tokens": gbs * seq if gbs and seq else None,
            "lr": pending["lr"] if pending else None,
            "memory_gb": to_float(m.group(6)),
        }

    def _time_per_step(self, step: int, when: datetime | None) -> float | None:
        if when is None or self._last_logged is None:
            return None
        last_step, last_time = self._last_logged
        return (when - last_time).total_seconds() / (step - last_step) if step > last_step else None

    def _global_batch(self) -> int | None:
        stated = self._config_int("global_batch_size")
        if stated:
            return stated
        per_device = to_int(self._cmd.get("per_device_train_batch_size"))
        world = self._world_size()
        accum = to_int(self._cmd.get("gradient_accumulation_steps"))
        return per_device * world * accum if per_device and world and accum else None

    def finish(self) -> ParseSummary:
        if self._megatron or not (self._ds_rows or self._rlhf.rows):
            try:
                summary = super().finish()
            except ParseError:
                if self._ds_rows:
                    raise
                raise ParseError(self.file_name, None, "no training step found (expected Megatron "
                                 "'iteration N/ M | ...' lines or DeepSpeed '[Rank 0] step=N' with "
                                 "'CurrSamplesPerSec=' timer lines)") from None
            return ParseSummary(format=self.format, config=summary.config, problems=summary.problems,
                                warnings=summary.warnings, results=self._profiled(), skipped_lines=summary.skipped_lines,
                                meta=summary.meta)
        return self._deepspeed_summary()

    def _deepspeed_summary(self) -> ParseSummary:
        world = self._world_size()
        warnings = []
        if world is None and self._exits:
            world = len(self._exits)
            warnings.append(f"n_devices={world} inferred from {world} launcher 'Process N exits successfully' "
                            "lines (this node only); pass --devices if the run spanned several nodes")
        per_device = to_int(self._cmd.get("per_device_train_batch_size")
                            or self._cmd.get("per_device_training_batch_size"))
        accum = to_int(self._cmd.get("gradient_accumulation_steps"))
        gbs = self._config_int("global_batch_size") or (
            per_device * world * accum if per_device and world and accum else None)
        if self._rlhf.rows:
            gbs = self._rlhf.samples or gbs
            warnings.append("an RLHF (PPO) step: step time is DeepSpeed-Chat's E2E latency (generation, scoring "
                            "and training); samples are prompts answered per step, tokens count prompt and answer "
                            "at their maximum lengths; model TFLOPS (with --model) counts training FLOPs for every token")
            if self._rlhf.repeats:
                warnings.append(f"{self._rlhf.repeats} E2E latency lines repeated a step already read; "
                                "the first was kept")
        elif self._ds_rows and gbs and not self._global_batch():
            warnings.append("step time from the time between logged steps (global batch known only at the end); "
                            "samples and tokens per step are in the config, not on the step rows")
        if self._ds_duplicates:
            warnings.append(f"{self._ds_duplicates} DeepSpeed timer lines repeated a step already read; "
                            "the first was kept")
        if self._skipped_optimizer_steps:
            warnings.append(self._skipped_note())
        meta: dict[str, Any] = {"epoch_losses": self._epoch_losses, "eval_ppl": self._ppl,
                                "running_avg_samples_per_s": self._running_avg}
        config = self._fields_for_deepspeed(world, gbs, per_device, accum)
        return ParseSummary(format=self.format, config=config, problems=tuple(self.problems),
                            warnings=tuple(warnings), results=self._profiled(), skipped_lines=self.skipped_lines,
                            meta={k: v for k, v in meta.items() if v})

    def _profiled(self) -> tuple[ResultRecord, ...]:
        return (self._profile.result,) if self._profile.result is not None else ()

    def _skipped_note(self) -> str:
        counts = self._skipped_by_engine
        engines = "" if len(counts) == 1 else (f" on its {len(counts)} engines (in DeepSpeed-Chat step 3 the "
                                                "actor's, then the critic's)")
        return (f"DeepSpeed skipped {' and '.join(map(str, counts))} optimizer steps for fp16 overflow{engines}: "
                "no weight update, but the step numbers count them")

    def _fields_for_deepspeed(self, world: int | None, gbs: int | None, per_device: int | None,
                              accum: int | None) -> RunConfig:
        model = self._cmd.get("model_name_or_path")
        zero = self._cmd.get("zero_stage") or self._cmd.get("actor_zero_stage")
        return run_config({
            "model_as_printed": model,
            "n_devices": world,
            "global_batch": gbs,
            "micro_batch": per_device,
            "grad_accum": accum,
            "seq_len": to_int(self._cmd.get("max_seq_len")) or prompt_and_answer(self._cmd),
            "workload": "rlhf" if self._rlhf.rows else None,
            "dp": world,
            "framework": "deepspeed",
            "framework_version": self._s.ds_version,
            "strategy": f"zero{zero}" if zero is not None else None,
            # loss-scale overflow skips happen only under fp16 dynamic loss scaling
            "precision": "fp16" if self._skipped_optimizer_steps else None,
        })


def _timestamp(line: str) -> datetime | None:
    m = _TIMESTAMP.match(line)
    if m is None:
        return None
    try:
        return datetime.strptime(f"{m.group(1)}.{m.group(2)}", "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        return None


PARSER = DeepSpeedParser
