"""Megatron-LM family stdout (Megatron-LM/Core, Megatron-Bridge, Megatron-DeepSpeed, Primus, MindSpeed, Pai-Patch).

One step row per printed ``iteration N/ M | ... | elapsed time per iteration (ms): X | ...`` line. Step lines are
found and read vectorized with Polars over each chunk (the hot path of a 1 GB log); only configuration lines
(argument dump, YAML config, command line, ``using world size``) are read in Python, and they are few.

Decisions a reader of the data should know:
- Several ranks printing the same iteration (interleaved output, Primus printing each line twice): the first
  line of a step is kept; later ones are counted in a warning. Only the highest step seen is tracked, so a
  step number at or below it is a duplicate (memory does not grow with the file).
- Several launches in one file (a new ``arguments`` dump or ``using world size`` after steps): a launch that
  resumes above the highest step kept is kept; one whose numbering restarts is ignored, with a warning. Steps
  go out chunk by chunk and cannot be taken back, so the *first* launch wins; keeping a later one would mix
  runs of different world sizes in one step table.
- Configuration: the last value stated wins (Megatron-Bridge dumps its default recipe, then the override).
- ``tokens`` per step: ``consumed tokens`` deltas when printed, else global batch x sequence length
  (``actual seqlen`` on the line, else ``seq_length`` from the config).
- ``reported_tokens_per_s_per_device``: a per-GPU field when printed, else the aggregate ``tokens per second``
  divided by the world size.
- A row is one *logged* iteration; with ``log-interval`` k the printed time is the mean over k iterations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import polars as pl

from ingest.parsers._common import (
    NUM,
    grad_accum,
    is_unset,
    note,
    null_column,
    precision_from_flags,
    precision_from_name,
    run_config,
    step_frame_from_columns,
    strip_rank_prefix,
    to_bool,
    to_int,
)
from ingest import native
from ingest.parsers.base import MAX_PROBLEMS_KEPT, LogParser
from ingest.text import MAX_LINE_BYTES, TextChunk
from perfledger.errors import ParseError
from perfledger.records import LineProblem, ParseSummary, empty_steps
from perfledger.vocabulary import LogFormat


@dataclass(frozen=True, slots=True)
class _Labeled:
    """A field printed as ``<label><head><value><tail> |``: its regex, and what the text between its label and
    the next ``|`` looks like when that regex matches there (so it can be checked without a capture).

    A tail, when there is one, starts with ``/`` (``12.5/13.0``); values never contain ``/`` or spaces.
    """

    label: str
    value: str
    head: str = r"\s*"
    tail: str = ""
    also_spelled: tuple[str, ...] = ()

    @property
    def pattern(self) -> str:
        labels = "|".join(_escape(label) for label in (self.label, *self.also_spelled))
        return (f"(?:{labels})" if self.also_spelled else labels) + rf"{self.head}({self.value}){self.tail}\s*\|"

    @property
    def token(self) -> str:
        return rf"^{self.head}(?:{self.value}){self.tail}\s*$"


def _escape(text: str) -> str:
    return re.sub(r"[\\^$.|?*+()\[\]{}]", lambda m: "\\" + m.group(), text)


_INT = r"\d+"
_RATIO = rf"(?:/{NUM})?"
_LABELED: dict[str, _Labeled] = {
    "_step": _Labeled("iteration", _INT, head=r"\s+", tail=r"\s*/\s*\d+"),
    "elapsed_ms": _Labeled("elapsed time per iteration (ms):", NUM, tail=_RATIO),
    "lr": _Labeled("learning rate:", NUM),
    "gbs": _Labeled("global batch size:", _INT),
    "loss": _Labeled("lm loss:", NUM, also_spelled=("lm-loss:",)),
    "grad_norm": _Labeled("grad norm:", NUM),
    "tflops": _Labeled("throughput per GPU (TFLOP/s/GPU):", NUM, tail=_RATIO),
    "tok_gpu": _Labeled("tokens per GPU (tokens/s/GPU):", NUM, tail=_RATIO),
    "tgs": _Labeled("tokens per gpu per second (tgs):", NUM),
    "consumed_tokens": _Labeled("consumed tokens:", _INT),
    "consumed_samples": _Labeled("consumed samples:", _INT),
    "seqlen": _Labeled("actual seqlen:", _INT),
    "skipped": _Labeled("number of skipped iterations:", _INT),
    "nan_iters": _Labeled("number of nan iterations:", _INT),
}
_STEP = _LABELED["_step"].pattern
_FIELDS: dict[str, str] = {name: field.pattern for name, field in _LABELED.items() if name != "_step"} | {
    "tflops_ds": rf"\|\s*TFLOPs:\s*({NUM})\s*\|",
    "tok_total": rf"\|\s*tokens per second:\s*({NUM})\s*\|",
    "mem_max": rf"max mem usage/usage_ratio:\s*({NUM})GB",
    "mem": rf"mem usage/free/total/usage_ratio:\s*({NUM})GB",
}
_LAUNCH_LITERALS = ("-- arguments --", "using world size:")
_LAUNCH = "|".join(map(_escape, _LAUNCH_LITERALS))
_ITERATION = "iteration "  # a line holding it is read for a step; any other line may configure the run
_CONFIG_HINT = (
    r"\w ?\.{2,} ?\S|using world size|^\s*[a-z_0-9]+: \S|--num-layers|--seq-length|--nproc"
    r"|padded vocab|GPU \d+: .+\(UUID|memory \(MB\)|dist_world_size=|DeepSpeed info: version|Primus|MindSpeed"
    r"|mindspeed|megatron\.bridge|habana_frameworks|Megatron-DeepSpeed|deepspeed\.launcher"
)

_KEYS_TEXT = (
    "num_layers hidden_size ffn_hidden_size num_attention_heads num_query_groups group_query_attention "
    "padded_vocab_size vocab_size swiglu gated_linear_unit num_experts num_moe_experts moe_router_topk "
    "seq_length encoder_seq_length global_batch_size micro_batch_size tensor_model_parallel_size "
    "pipeline_model_parallel_size context_parallel_size expert_model_parallel_size data_parallel_size "
    "world_size fp16 bf16 fp8 mixed_precision train_iters nproc_per_node nnodes log_interval").split()


def _as_dumped(keys: list[str]) -> list[str]:
    """How an argument dump may print each key for _ARG_DUMP: as is, or with one "_" as a space ("num layers")."""
    return sorted({*keys} | {key[:i] + " " + key[i + 1:] for key in keys
                                             for i, c in enumerate(key) if c == "_"})


# Every line _config_line can take something from contains one of these (it reads the line after its rank
# prefix, a suffix of the line): a necessary condition, so filtering on it changes nothing but the time spent
# on rank-prefixed chatter, which _CONFIG_HINT alone lets through ("0: [default0]:..." looks like YAML). A dump
# line counts only when _ARG_DUMP's key is one _set keeps (or DeepSpeed's train_batch_size): Megatron's timers
# ("save-checkpoint ....: (12.3, 14.1)") were three in four lines read as configuration, 0.4 s/GB.
_CONFIG_USED = (
    r"Primus|MindSpeed|mindspeed|megatron\.bridge|habana_frameworks|DeepSpeed info|deepspeed info"
    r"|deepspeed\.launcher|using world size|padded vocab|\(UUID|memory \(MB\)|dist_world_size=| --"
    r"|(?:" + "|".join(_as_dumped([*_KEYS_TEXT, "train_batch_size"])) + r") ?\.\."
    r"|(?:" + "|".join(sorted(_KEYS_TEXT)) + r"): [^\s#]"
)

_ARG_DUMP = re.compile(r"(?:^|\s)([a-z][a-z0-9_]*(?: [a-z0-9_]+)?) ?\.{2,} ?(\S.*?)\s*$")
_YAML = re.compile(r"^\s*([a-z_0-9]+): ([^\s#][^#]*?)\s*(?:#.*)?$")
_FLAG = re.compile(r"--([a-z][a-z0-9_-]*)(?:[ =](?!--)(\S+))?")
_WORLD = re.compile(
    r"using world size:\s*(\d+)(?:.*?data-parallel[- ]size:\s*(\d+))?(?:.*?context-parallel size:\s*(\d+))?"
    r"(?:.*?tensor-model-parallel size:\s*(\d+))?(?:.*?pipeline-model-parallel size:\s*(\d+))?"
)
_PADDED_VOCAB = re.compile(r"padded vocab \(size: (\d+)\).*?new size: (\d+)")
_GPU_NAME = re.compile(r"GPU \d+: (.+?) \(UUID")
_MEMORY = re.compile(r"memory \(MB\).*?max allocated: (\d+\.?\d*)")
_DIST_WORLD = re.compile(r"dist_world_size=(\d+)")
_DS_VERSION = re.compile(r"DeepSpeed info: version=(\S+?),|deepspeed info \.{2,} (\S+?),")

# Argument names (dump, YAML, command line with "-" -> "_") that configure the run.
_KEYS = frozenset({
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "group_query_attention", "padded_vocab_size", "vocab_size", "swiglu", "gated_linear_unit", "num_experts",
    "num_moe_experts", "moe_router_topk", "seq_length", "encoder_seq_length", "global_batch_size",
    "micro_batch_size", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "expert_model_parallel_size", "data_parallel_size", "world_size", "fp16", "bf16", "fp8", "mixed_precision",
    "train_iters", "nproc_per_node", "nnodes", "log_interval",
})
assert _KEYS == frozenset(_KEYS_TEXT), "_CONFIG_USED must name every key _set keeps"


class _Launch(Enum):
    PENDING = "pending"  # config lines seen, no step yet: not decided whether this launch is kept
    KEPT = "kept"
    IGNORED = "ignored"


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
    ignored_steps: int = 0
    ignored_launches: list[str] = field(default_factory=list)
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


class MegatronParser(LogParser):
    format = LogFormat.MEGATRON
    # The 1 GB log, 5 runs each (median s, peak RSS MB), with the store's 40 MB insert: 6 MB chunks (5.7, 287
    # with a 64 MB insert), 8 MB (5.9, 243-280), 10 MB (5.2, 238-275), 12 MB (5.1, 245-301). Bigger chunks mean
    # fewer per-chunk query plans and thread handoffs; 12 MB left no margin under issue 8's 300 MB. Once the
    # store dropped the insert's cached blocks before the summary, on a faster machine, 5 runs each interleaved:
    # 10 MB (2.86 s, 264 median, 269 max), 12 MB (2.75, 255, 273), 14 MB (2.74, 277, 285), 16 MB (2.68, 284, 288);
    # the 100 MB log: 10 MB 252-256, 12 MB 266-270.
    # Without the compiled scanner a chunk's lines become a Polars frame of strings: at 10 MB the 1 GB log then
    # peaked at 283-294 MB (304 median of 3 in a second series), at 6 MB at 258-272 MB, 5% slower.
    CHUNK_BYTES_SCANNED = 12 * 1024 * 1024
    CHUNK_BYTES_POLARS = 6 * 1024 * 1024

    @property
    def chunk_bytes(self) -> int:  # type: ignore[override]
        return self.CHUNK_BYTES_SCANNED if native.labeled_scan() is not None else self.CHUNK_BYTES_POLARS

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return bool(re.search(
            r"elapsed time per iteration \(ms\)|-- arguments --|using world size:|_model_parallel_size \.{3,}"
            r"|megatron\.bridge\.training|pretrain_(?:gpt|mcore_\w+|llama\w*|bert|t5|mamba)\.py",
            head,
        ))

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._s = _State()

    # -- chunks ---------------------------------------------------------------------------------------------

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        # MegatronParser's own prepare: DeepSpeedParser, which feeds Megatron chunks through here, keeps the base one
        return self._feed_segments(MegatronParser.prepare(self, lines, first_lineno))

    def prepare(self, lines: Sequence[str], first_lineno: int) -> list[_Segment]:
        return _segments(pl.Series("line", lines, dtype=pl.String), first_lineno, all(map(str.isascii, lines)))

    def prepare_chunk(self, chunk: TextChunk) -> list[_Segment]:
        if (scanned := _scanned_segments(chunk.text, chunk.first_lineno)) is not None:
            return scanned
        first_lineno, ascii = chunk.first_lineno, chunk.text.isascii()
        lines = pl.Series("line", chunk.lines(), dtype=pl.String)
        del chunk  # its text (chunk_bytes) is not needed past here; the pipeline holds no other reference
        return _segments(lines, first_lineno, ascii)

    def feed_prepared(self, prepared: list[_Segment]) -> pl.DataFrame:
        return self._feed_segments(prepared)

    def _feed_segments(self, segments: list[_Segment]) -> pl.DataFrame:
        frames = []
        for segment in segments:
            if segment.starts_launch:
                self._launch_marker()
            for line in segment.config_lines:
                self._config_line(line)
            if segment.steps is not None and (frame := self._steps(segment.steps)).height:
                frames.append(frame)
        return pl.concat(frames) if frames else empty_steps()

    def _launch_marker(self) -> None:
        s = self._s
        if s.steps_in_launch:
            s.launches += 1
            s.launch = _Launch.PENDING
            s.pending = {}
            s.steps_in_launch = 0

    # -- steps ----------------------------------------------------------------------------------------------

    def _steps(self, found: _StepLines) -> pl.DataFrame:
        s = self._s
        s.steps_in_launch += found.step.len()
        if s.launch is _Launch.PENDING:
            self._decide_launch(int(found.step[0]), int(found.lineno[0]))
        if s.launch is _Launch.IGNORED:
            s.ignored_steps += found.step.len()
            return empty_steps()
        cols = self._drop_truncated(found.cols, found.step, found.lineno)
        step = cols.pop("_step")
        cols.pop("_lineno")
        if step.is_empty():
            return empty_steps()
        keep = self._first_of_each_step(step)
        if not keep.all():
            s.duplicates += int((~keep).sum())
            step = step.filter(keep)
            cols = {k: v.filter(keep) for k, v in cols.items()}
        if step.is_empty():
            return empty_steps()
        self._tally(cols, step)
        return self._frame(cols, step)

    def _decide_launch(self, first: int, lineno: int) -> None:
        s = self._s
        if s.max_step is None or first > s.max_step:
            if s.max_step is not None:
                s.resumed.append(f"line {lineno} (step {first})")
            s.launch = _Launch.KEPT
            for key, value in s.pending.items():
                s.config[key] = value
        else:
            s.launch = _Launch.IGNORED
            s.ignored_launches.append(f"line {lineno} (restarts at step {first})")
        s.pending = {}

    def _drop_truncated(self, cols: dict[str, pl.Series], step: pl.Series, lineno: pl.Series) -> dict[str, pl.Series]:
        ok = cols["elapsed_ms"].is_not_null()
        complete = cols["nan_iters"].is_not_null()
        for n in lineno.filter(~ok).to_list():
            self._s.truncated += 1
            self.problem(n, "iteration line without a complete 'elapsed time per iteration (ms)' field "
                            "(cut short?); the line was skipped")
        for n in lineno.filter(ok & ~complete).to_list():
            self._s.incomplete_lines += 1
            note(self.problems, MAX_PROBLEMS_KEPT, LineProblem(
                self.file_name, n, "iteration line ends before 'number of nan iterations' (cut short?); "
                                   "kept the fields that were complete"))
        out = {k: v.filter(ok) for k, v in cols.items()} if not ok.all() else dict(cols)
        out["_step"] = step.filter(ok)
        out["_lineno"] = lineno.filter(ok)
        return out

    def _first_of_each_step(self, step: pl.Series) -> pl.Series:
        """True for a row whose step is above every step before it (in this chunk and earlier ones)."""
        s = self._s
        floor = s.max_step if s.max_step is not None else -1
        before = step.cum_max().shift(1).fill_null(floor)
        keep = (step > before) & (step > floor)
        s.max_step = max(floor, int(step.max()))  # type: ignore[arg-type]
        return keep

    def _tally(self, cols: dict[str, pl.Series], step: pl.Series) -> None:
        s = self._s
        if s.first_step is None:
            s.first_step = int(step[0])
        s.rows += step.len()
        skipped = cols["skipped"].fill_null(0)
        s.skipped_iterations += int(skipped.sum())
        s.rows_with_skips += int((skipped > 0).sum())
        s.nan_iterations += int(cols["nan_iters"].fill_null(0).sum())
        loss = cols["loss"]
        s.nonfinite_losses += int((loss.is_nan() | loss.is_infinite()).fill_null(False).sum())
        deltas = step.diff().drop_nulls()
        if s.last_step is not None:
            deltas = pl.concat([pl.Series([int(step[0]) - s.last_step]), deltas])
        for value, count in deltas.value_counts().iter_rows():
            s.step_deltas[int(value)] = s.step_deltas.get(int(value), 0) + int(count)

    def _frame(self, cols: dict[str, pl.Series], step: pl.Series) -> pl.DataFrame:
        s = self._s
        prev_step = step.shift(1, fill_value=s.last_step).cast(pl.Float64)
        span = step.cast(pl.Float64) - prev_step
        samples = cols["gbs"]
        if samples.null_count():
            consumed = cols["consumed_samples"]
            from_consumed = (consumed - consumed.shift(1, fill_value=s.last_consumed_samples)) / span
            samples = _fill(samples.fill_null(from_consumed), self._config_int("global_batch_size"))
        seq = _fill(cols["seqlen"], self._seq_len())
        tokens = samples * seq
        ct = cols["consumed_tokens"]
        if ct.null_count() < ct.len():
            tokens = ((ct - ct.shift(1, fill_value=s.last_consumed_tokens)) / span).fill_null(tokens)
        world = self._world_size()
        per_device = cols["tok_gpu"].fill_null(cols["tgs"])
        if world:
            per_device = per_device.fill_null(cols["tok_total"] / world)
        frame = step_frame_from_columns({
            "step": step,
            "step_time_s": cols["elapsed_ms"] / 1000.0,
            "tokens": tokens,
            "samples": samples,
            "loss": cols["loss"],
            "lr": cols["lr"],
            "grad_norm": cols["grad_norm"],
            "reported_tflops_per_device": cols["tflops"].fill_null(cols["tflops_ds"]),
            "reported_tokens_per_s_per_device": per_device,
            "memory_gb": cols["mem_max"].fill_null(cols["mem"]),
        }, step.len())
        s.last_step = int(step[-1])
        s.last_consumed_tokens = _last(cols["consumed_tokens"], s.last_consumed_tokens)
        s.last_consumed_samples = _last(cols["consumed_samples"], s.last_consumed_samples)
        s.last_gbs = _last(cols["gbs"], s.last_gbs)
        return frame

    # -- configuration --------------------------------------------------------------------------------------

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
        if (m := _MEMORY.search(line)) is not None:
            mb = float(m.group(1))
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
        if s.launch is _Launch.IGNORED:
            return
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

    # -- summary --------------------------------------------------------------------------------------------

    def finish(self) -> ParseSummary:
        s = self._s
        if not s.rows:
            raise ParseError(self.file_name, None, self._why_no_steps())
        return ParseSummary(
            format=self.format,
            config=run_config(self._config_fields()),
            problems=tuple(self.problems),
            warnings=tuple(self._warnings()),
            skipped_lines=self.skipped_lines,
            meta=self._meta(),
        )

    def _why_no_steps(self) -> str:
        if self._s.truncated:
            return "no complete training iteration line: every 'iteration N/ M' line was cut short"
        return ("no training iteration found (expected Megatron lines like "
                "'iteration 10/ 500 | ... | elapsed time per iteration (ms): 1234.5 | ...')")

    def _config_fields(self) -> dict[str, Any]:
        gbs = self._config_int("global_batch_size") or (int(self._s.last_gbs) if self._s.last_gbs else None)
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

    def _warnings(self) -> list[str]:
        s = self._s
        out = []
        if s.duplicates:
            out.append(f"{s.duplicates} iteration lines repeated a step already read (several ranks printing, "
                       "or a logger printing twice); the first line of each step was kept")
        if s.ignored_launches:
            out.append(f"{s.launches} launches in one file; kept the first (steps {s.first_step}-{s.max_step}); "
                       f"ignored {s.ignored_steps} iteration lines of later launches whose step numbering "
                       f"restarted at {', '.join(s.ignored_launches)}; split the file to ingest those")
        if s.resumed:
            out.append(f"the run was relaunched and resumed at {', '.join(s.resumed)}; steps kept as one run")
        if s.skipped_iterations:
            out.append(f"{s.skipped_iterations} iterations were skipped by the optimizer (loss-scale overflow) "
                       f"across {s.rows_with_skips} logged rows; those rows are kept")
        if s.nan_iterations:
            out.append(f"{s.nan_iterations} iterations had a NaN loss (Megatron's 'number of nan iterations')")
        if s.nonfinite_losses:
            out.append(f"{s.nonfinite_losses} logged rows have a NaN or infinite loss; kept as NaN/inf")
        if s.incomplete_lines:
            out.append(f"{s.incomplete_lines} iteration lines end early (cut short?); their complete fields kept")
        if self._world_size() is None:
            out.append("world size not stated in the log: per-device figures need --devices")
        return out

    def _meta(self) -> dict[str, Any]:
        s = self._s
        meta: dict[str, Any] = {}
        if s.step_deltas:
            meta["log_interval"] = max(s.step_deltas.items(), key=lambda kv: kv[1])[0]
        if s.peak_allocated_mb is not None:
            meta["peak_max_allocated_gib"] = round(s.peak_allocated_mb / 1024, 3)
        if (iters := self._config_int("train_iters")) is not None:
            meta["train_iters"] = iters
        if s.ds_version:
            meta["deepspeed_version"] = s.ds_version
        if s.launches > 1:
            meta["launches"] = s.launches
        return meta


@dataclass(frozen=True, slots=True)
class _StepLines:
    """The iteration lines of one segment: step number, line number and every _FIELDS value, read vectorized."""

    step: pl.Series
    lineno: pl.Series
    cols: dict[str, pl.Series]


@dataclass(frozen=True, slots=True)
class _Segment:
    """Lines between two launch markers (or a chunk edge): what feed_prepared needs, read without parser state."""

    starts_launch: bool
    config_lines: list[str]
    steps: _StepLines | None


def _segments(text: pl.Series, first_lineno: int, ascii: bool) -> list[_Segment]:
    """ascii: every line is ASCII, known from the chunk at no cost (see _read_labeled)."""
    if text.is_empty():
        return []
    starts = text.str.contains(_LAUNCH).arg_true().to_list()
    bounds = sorted({0, *starts, text.len()})
    return [_segment(text.slice(a, b - a), first_lineno + a, a in starts, ascii)
            for a, b in zip(bounds, bounds[1:], strict=False)]


def _segment(seg: pl.Series, lineno0: int, starts_launch: bool, ascii: bool) -> _Segment:
    is_iter = seg.str.contains(_ITERATION, literal=True)
    rest = seg.filter(~is_iter)
    config_lines = rest.filter(_may_configure(rest)).to_list()
    if not is_iter.any():
        return _Segment(starts_launch, config_lines, None)
    return _segment_of(starts_launch, config_lines, is_iter.arg_true().cast(pl.Int64) + lineno0,
                       _extract(seg.filter(is_iter), ascii))


def _may_configure(lines: pl.Series) -> pl.Series:
    return lines.str.contains(_CONFIG_HINT) & lines.str.contains(_CONFIG_USED)


def _segment_of(starts_launch: bool, config_lines: list[str], pos: pl.Series, cols: dict[str, pl.Series]) -> _Segment:
    """The segment of these iteration lines (line numbers pos, fields cols): those without a step number dropped."""
    step = cols.pop("_step")
    found = step.is_not_null()
    if not found.all():
        pos, step, cols = pos.filter(found), step.filter(found), {k: v.filter(found) for k, v in cols.items()}
    if step.is_empty():
        return _Segment(starts_launch, config_lines, None)
    return _Segment(starts_launch, config_lines, _StepLines(step, pos, cols))


def _scanned_segments(text: str, first_lineno: int) -> list[_Segment] | None:
    """_segments of the chunk's lines, read by the compiled scanner (ingest/native/labeled_scan.c); None where it
    is not available or declines the chunk (not ASCII, a line past MAX_LINE_BYTES, a field only a regex reads).

    The scanner reads each _LABELED field by position as _read_labeled does and leaves every line it is not sure
    of to _by_regex, so the segments are _segments' own; _extract's shortcuts (counts stated as zero, consumed
    samples only without a batch size) are applied here on the same columns. 2.4x faster on a Megatron log.
    """
    scanner = native.labeled_scan()
    if scanner is None or (found := scanner.scan(text, *_SCAN_SPEC, MAX_LINE_BYTES)) is None:
        return None
    import numpy as np  # only here: 12 MB that a process reading no large Megatron log does not pay

    n_lines, launch, other_at, others, iter_at, starts, ends, values, status, nonzero = found
    if not n_lines:
        return []
    starts_launch = np.frombuffer(launch, np.int64).tolist()
    other_at, iter_at = np.frombuffer(other_at, np.int64), np.frombuffer(iter_at, np.int64)
    configuring = _may_configure(pl.Series("line", others, dtype=pl.String)).to_numpy()
    config_at, config_lines = other_at[configuring], [line for line, keep in zip(others, configuring) if keep]
    scanned = _Scanned(text, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64),
                       {name: (np.frombuffer(values[j], np.int64 if name == "_step" else np.float64),
                               np.frombuffer(status[j], np.uint8), np.frombuffer(nonzero[j], np.uint8))
                        for j, name in enumerate(_SCANNED)})
    bounds = sorted({0, *starts_launch, n_lines})
    segments = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        c0, c1 = np.searchsorted(config_at, [a, b])
        r0, r1 = (int(r) for r in np.searchsorted(iter_at, [a, b]))
        config = config_lines[c0:c1]
        if r0 == r1:
            segments.append(_Segment(a in starts_launch, config, None))
            continue
        pos = pl.Series("lineno", iter_at[r0:r1] + first_lineno, dtype=pl.Int64)
        segments.append(_segment_of(a in starts_launch, config, pos, scanned.columns(r0, r1)))
    return segments


@dataclass(frozen=True, slots=True)
class _Scanned:
    """The scanner's reading of a chunk's iteration lines: where each line is in text, and per field its
    values, status (0 label absent, 1 read, 2 left to the regex) and whether the line states the count non-zero."""

    text: str
    starts: Any
    ends: Any
    fields: dict[str, tuple[Any, Any, Any]]

    def columns(self, r0: int, r1: int) -> dict[str, pl.Series]:
        """_extract's columns for iteration lines r0..r1 (one segment)."""
        cols = {name: self._column(name, r0, r1) for name in ("_step", "gbs")}
        gbs_missing = bool(cols["gbs"].filter(cols["_step"].is_not_null()).null_count())
        for name in _FIELDS:
            if name not in _LABELED:  # the scanner declined every chunk where such a field's anchor is
                cols[name] = null_column(name, r1 - r0, pl.Float64)
            elif name == "consumed_samples" and not gbs_missing:
                cols[name] = null_column(name, r1 - r0, pl.Float64)
            elif name not in cols:
                cols[name] = self._column(name, r0, r1)
        return {name: cols[name] for name in _EXTRACTED}

    def _column(self, name: str, r0: int, r1: int) -> pl.Series:
        import numpy as np

        values, status, nonzero = (a[r0:r1] for a in self.fields[name])
        if name in _COUNTS and not nonzero.any():  # _read's zero path: 0 where the label is, as a literal test
            return pl.Series(name, np.ma.masked_array(np.zeros(r1 - r0), status == 0), dtype=pl.Float64)
        column = pl.Series(name, np.ma.masked_array(values, status != 1), dtype=_dtype(name))
        if (ask := np.flatnonzero(status == 2)).size:
            lines = pl.Series("line", [self.text[self.starts[r0 + i]:self.ends[r0 + i]] for i in ask.tolist()],
                              dtype=pl.String)
            column = column.scatter(ask, lines.to_frame().select(_by_regex(name)).to_series())
        return column


# A literal every match of the _FIELDS pattern of the same name contains: a field whose anchor no line of a chunk
# holds is not searched for at all (most logs print a third of the fields Megatron's variants know).
_ANCHORS: dict[str, str] = {
    "elapsed_ms": "elapsed time per iteration (ms):", "lr": "learning rate:", "gbs": "global batch size:",
    "loss": "loss:", "grad_norm": "grad norm:", "tflops": "(TFLOP/s/GPU):", "tflops_ds": "TFLOPs:",
    "tok_gpu": "(tokens/s/GPU):", "tgs": "(tgs):", "tok_total": "tokens per second:",
    "consumed_tokens": "consumed tokens:", "consumed_samples": "consumed samples:", "seqlen": "actual seqlen:",
    "skipped": "number of skipped iterations:", "nan_iters": "number of nan iterations:",
    "mem_max": "max mem usage/usage_ratio:", "mem": "mem usage/free/total/usage_ratio:",
}
_SPELLINGS = {spelling: spelling for field in _LABELED.values() for spelling in field.also_spelled}
_COUNTS = ("skipped", "nan_iters")  # almost always 0: a literal test stands in for the regex when no line says otherwise

_EXTRACTED = ("_step", *(name for name in _FIELDS if name != "consumed_samples"), "consumed_samples")  # _extract's
_SCANNED = ("_step", *(name for name in _LABELED if name != "_step"))
_SCAN_KIND = {"_step": 0, _INT: 1, NUM: 2}  # labeled_scan.c: int64 step, digits as a double, a NUM as a double
_SCAN_HEAD = {r"\s*": 0, r"\s+": 1}
_SCAN_TAIL = {"": 0, _RATIO: 1, _LABELED["_step"].tail: 2}
_SCAN_SPEC = (
    tuple((_LABELED[name].label.encode(), _SCAN_KIND["_step" if name == "_step" else _LABELED[name].value],
           _SCAN_HEAD[_LABELED[name].head], _SCAN_TAIL[_LABELED[name].tail], name in _COUNTS,
           tuple(spelling.encode() for spelling in _LABELED[name].also_spelled)) for name in _SCANNED),
    tuple(_ANCHORS[name].encode() for name in _FIELDS if name not in _LABELED),  # the scanner declines these
    tuple(literal.encode() for literal in _LAUNCH_LITERALS),
    _ITERATION.encode(),
)


def _extract(lines: pl.Series, ascii: bool) -> dict[str, pl.Series]:
    """The step number ("_step", Int64) and each _FIELDS value (Float64) of each line, null where absent.

    Passes that cannot match are skipped: fields whose anchor is in no line, skipped/nan counts when no line's
    count is non-zero (then 0 where the label is present), consumed samples when every line has the batch size.
    An anchor in the first line is known to be present without a pass over the others.
    """
    frame = lines.to_frame("line")
    line = pl.col("line")
    first = lines[0] if lines.len() else ""
    unseen = {name: anchor for name, anchor in _ANCHORS.items() if anchor not in first} | _SPELLINGS
    counts = {f"{name} > 0": _escape(_ANCHORS[name]) + r"\s*[1-9]" for name in _COUNTS}
    probe = {name: True for name in _ANCHORS} | _any_of(frame, {k: _escape(a) for k, a in unseen.items()}) \
        | _any_of(frame, counts)
    cols = _read(frame, ["_step", *(name for name in _FIELDS if name != "consumed_samples")], probe, ascii)
    gbs_missing = bool(cols["gbs"].filter(cols["_step"].is_not_null()).null_count())
    cols |= _read(frame, ["consumed_samples"], probe | {"consumed_samples": probe["consumed_samples"] and gbs_missing},
                  ascii)
    return cols


def _any_of(frame: pl.DataFrame, patterns: dict[str, str]) -> dict[str, bool]:
    """For each pattern, whether any line matches it. Usually none does, and one pass of the alternation says
    so for all (a regex of literals is one SIMD scan: 5x less than a pass per pattern)."""
    if not patterns:
        return {}
    line = pl.col("line")
    if not frame.select(line.str.contains("|".join(patterns.values())).any()).item():
        return dict.fromkeys(patterns, False)
    return frame.select(line.str.contains(rx).any().alias(key) for key, rx in patterns.items()).row(0, named=True)


def _read(frame: pl.DataFrame, names: list[str], probe: dict[str, bool], ascii: bool) -> dict[str, pl.Series]:
    """names' columns, each the cheapest exact way: a null column when its anchor is in no line, a literal test
    for a count no line states as non-zero, by position for a _LABELED field (unless a line spells its label
    another way), by regex otherwise."""
    line = pl.col("line")
    absent = [name for name in names if not probe.get(name, True)]
    zero = [name for name in names if name in _COUNTS and probe[name] and not probe[f"{name} > 0"]]
    by_position = {name: _LABELED[name] for name in names if name in _LABELED and name not in absent + zero
                   and not any(probe[spelling] for spelling in _LABELED[name].also_spelled)}
    cols = frame.with_columns(  # with_columns: a null column gets the frame's height even when all are literals
        *(pl.lit(None, dtype=pl.Float64).alias(name) for name in absent),
        *(pl.when(line.str.contains(_ANCHORS[name], literal=True)).then(0.0).otherwise(None).alias(name)
          for name in zero),
        *(_by_regex(name) for name in names if name not in absent + zero and name not in by_position),
    ).drop("line").to_dict() | _read_labeled(frame, by_position, ascii)
    return {name: cols[name] for name in names}


def _by_regex(name: str) -> pl.Expr:
    pattern = _STEP if name == "_step" else _FIELDS[name]
    return pl.col("line").str.extract(pattern, 1).cast(_dtype(name), strict=False).alias(name)


def _dtype(name: str) -> type[pl.DataType]:
    return pl.Int64 if name == "_step" else pl.Float64


_WINDOW = 64  # bytes after a label searched for the closing "|"; a value printed wider is read by regex


def _read_labeled(frame: pl.DataFrame, fields: dict[str, _Labeled], ascii: bool) -> dict[str, pl.Series]:
    """Each field's value as _by_regex reads it, found by position: the label's first occurrence, the text up to
    the next "|", checked against the field's token shape (a match, not a capture) and cast.

    Where that finds nothing on a line that has the label (the first occurrence is not the field, the value is
    wider than _WINDOW bytes, or the line is not ASCII, where a window could end inside a character), that line
    is read by the regex, which may match a later occurrence: the result is _by_regex's on every line.
    A regex capture per line and field was most of the parse; reading by position is 1.4x faster on a Megatron log.
    """
    if not fields:
        return {}
    line = pl.col("line")
    plain = None if ascii else line.str.len_bytes() == line.str.len_chars()

    def window(field: _Labeled) -> pl.Expr:
        at = line.str.find(field.label, literal=True)
        start = (at if plain is None else pl.when(plain).then(at)) + len(field.label)
        return line.cast(pl.Binary).bin.slice(start, _WINDOW).cast(pl.String)

    windows = frame.lazy().select(*(
        expr for name, field in fields.items() for expr in (
            line.str.find(field.label, literal=True).is_not_null().alias(f"has {name}"), window(field).alias(name))
    )).collect()
    values = windows.select(*(
        expr for name, field in fields.items() for expr in (
            pl.col(f"has {name}"), _value_in_window(pl.col(name), field, name).alias(name))
    ))
    out = {}
    for name in fields:
        value, missed = values[name], values[f"has {name}"] & values[name].is_null()
        if missed.any():
            rows = missed.arg_true()
            value = value.scatter(rows, frame["line"].gather(rows).to_frame().select(_by_regex(name)).to_series())
        out[name] = value
    return out


def _value_in_window(window: pl.Expr, field: _Labeled, name: str) -> pl.Expr:
    end = window.str.find("|", literal=True)  # bin.slice reads a null length as "to the end": no "|", no token
    token = pl.when(end.is_not_null()).then(window.cast(pl.Binary).bin.slice(0, end).cast(pl.String))
    text = token.str.splitn("/", 2).struct.field("field_0") if field.tail else token
    return pl.when(token.str.contains(field.token)).then(text.str.strip_chars().cast(_dtype(name), strict=False))


def _last(series: pl.Series, previous: float | None) -> float | None:
    kept = series.drop_nulls()
    return float(kept[-1]) if kept.len() else previous


def _fill(series: pl.Series, value: float | None) -> pl.Series:
    return series if value is None else series.fill_null(value)


def _either_bool(*texts: str | None) -> bool | None:
    values = [to_bool(t) for t in texts if t is not None]
    if any(values):
        return True
    return False if values and all(v is False for v in values) else None


PARSER = MegatronParser
