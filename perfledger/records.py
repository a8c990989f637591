"""Frozen, typed records handed between layers (parser -> pipeline -> store -> calc -> views).

Steps travel in batches as Polars frames with STEP_SCHEMA, so a 1 GB log never becomes millions of
Python objects; everything else is a small frozen dataclass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import polars as pl

from perfledger.vocabulary import LogFormat

if TYPE_CHECKING:
    from perfledger.catalog.link import UnlinkedName

# One row per logged optimizer step. `tokens` and `samples` are per step over all devices;
# reported_* are what the log itself printed (per device), kept beside our recomputation.
STEP_SCHEMA: dict[str, pl.DataType] = {
    "step": pl.Int64(),
    "step_time_s": pl.Float64(),
    "tokens": pl.Float64(),
    "samples": pl.Float64(),
    "loss": pl.Float64(),
    "lr": pl.Float64(),
    "grad_norm": pl.Float64(),
    "reported_tflops_per_device": pl.Float64(),
    "reported_mfu": pl.Float64(),
    "reported_tokens_per_s_per_device": pl.Float64(),
    "memory_gb": pl.Float64(),
    "launch": pl.Int64(),  # which launch of the file (null: the log holds one); see perfledger.calc.launches
    # An RLHF step's parts as the log prints them (DeepSpeed-Chat step 3): the generation (rollout) time and the
    # training time within step_time_s; the rest is scoring and gathering. See perfledger.calc.phases.
    "generation_s": pl.Float64(),
    "training_s": pl.Float64(),
    # A progress bar's clock (tqdm's elapsed, whole seconds) at the step, where the step time is the bar's printed
    # rate: the summary times the steady window by it (perfledger.calc.clock).
    "clock_s": pl.Float64(),
}


def empty_steps() -> pl.DataFrame:
    return pl.DataFrame(schema=STEP_SCHEMA)


def steps_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows (dicts with any subset of STEP_SCHEMA keys) -> a frame with exactly STEP_SCHEMA."""
    if not rows:
        return empty_steps()
    return pl.DataFrame(rows, schema=STEP_SCHEMA, strict=False)


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line that was skipped or only partly understood; the run is still stored."""

    file_name: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file_name}:{self.line}" if self.line is not None else self.file_name
        return f"{where}: {self.reason}"


_NUMBER = re.compile(r"\d[\d,.]*")


def problem_kind(reason: str) -> str:
    """What a problem is, without its particulars: the reason up to its first ";", numbers as N, so problems
    that are not kept can still be counted by kind ("step 123 is beyond 64 bits; skipped" -> "step N is beyond
    N bits")."""
    return _NUMBER.sub("N", reason.split(";")[0]).strip()


def more_problems(left_out: Mapping[str, int]) -> str | None:
    """How many problems were counted but not listed, by kind, most first: "... and 1,234 more: 1,200 not a
    number, 34 cut line"; None when every problem was listed."""
    total = sum(left_out.values())
    if not total:
        return None
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(left_out.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"... and {total:,} more: {kinds}"


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Configuration a log states (or the user supplies). None = not stated."""

    model: str | None = None  # canonical model id when resolvable, else the name as printed
    model_as_printed: str | None = None
    accelerator: str | None = None  # canonical accelerator id when resolvable
    accelerator_as_printed: str | None = None
    n_devices: int | None = None
    precision: str | None = None  # a Precision value
    seq_len: int | None = None
    global_batch: int | None = None
    micro_batch: int | None = None
    grad_accum: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    framework: str | None = None
    framework_version: str | None = None
    strategy: str | None = None
    workload: str | None = None
    tokens_per_step: int | None = None  # when the log states it outright (nanoGPT's "tokens per iteration")
    printed_window: int | None = None  # steps each of the log's own per-step figures averages (a speed monitor's)
    # Architecture when the log prints it (lets FLOPs be computed for a model with no catalog entry).
    num_layers: int | None = None
    hidden_size: int | None = None
    ffn_hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    vocab_size: int | None = None
    swiglu: bool | None = None
    num_experts: int | None = None
    moe_top_k: int | None = None

    def merged(self, override: RunConfig) -> RunConfig:
        """This config with every field that `override` states replaced by the override's value."""
        changes = {f.name: getattr(override, f.name) for f in fields(override) if getattr(override, f.name) is not None}
        return replace(self, **changes)

    def stated(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True, slots=True)
class ResultRecord:
    """One reported or measured number, the row shape of the `result` table (ids resolved or None)."""

    metric: str
    value: float | None  # None only for a claims cell kept as printed (metric "printed"): not a number
    unit: str
    source_id: str | None = None
    run_id: int | None = None
    accelerator_id: str | None = None
    accelerator_as_printed: str | None = None
    n_devices: int | None = None
    framework: str | None = None
    framework_version: str | None = None
    model_id: str | None = None
    model_as_printed: str | None = None
    workload: str | None = None
    precision: str | None = None
    seq_len: int | None = None
    global_batch: int | None = None
    micro_batch: int | None = None
    grad_accum: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    cp: int | None = None
    strategy: str | None = None
    sparsity: float | None = None
    evidence: str = "reported"
    locator: str | None = None
    note: str | None = None
    baseline: str | None = None  # for relative_throughput: what the ratio is against
    precision_as_printed: str | None = None  # a claims file's precision text, beside the canonical precision
    attributes: str | None = None  # JSON object (sorted keys): a claims file's further configuration columns
    printed: str | None = None  # JSON object: a claims row's cells the vocabulary reads, as printed
    unread: str | None = None  # JSON object: field -> the cell the vocabulary could not read yet


# Fields added after stores were written: a record leaves them out of its row key while they are None, so a row
# stored before them keeps its key (a re-import stays a no-op).
LATE_RESULT_FIELDS = ("precision_as_printed", "attributes", "printed", "unread")


@dataclass(frozen=True, slots=True)
class ParseSummary:
    """What a parser knows once the whole file has been read (steps went out in batches)."""

    format: LogFormat
    config: RunConfig
    problems: tuple[LineProblem, ...] = ()
    warnings: tuple[str, ...] = ()
    results: tuple[ResultRecord, ...] = ()  # non-step figures: MLPerf time to train, claims, microbench
    skipped_lines: int = 0
    meta: dict[str, Any] = field(default_factory=dict)  # format-specific extras kept in run.config JSON
    problems_left_out: Mapping[str, int] = field(default_factory=dict)  # problems past the kept ones, by kind


@dataclass(frozen=True, slots=True)
class SaveResult:
    run_id: int
    created: bool
    imported: str | None = None  # a claims file: "3 added, 2 updated, 0 unchanged"
    refused: tuple[str, ...] = ()  # a claims file: "FILE:LINE: reason" for each row the store refused
    unlinked: tuple[UnlinkedName, ...] = ()  # a claims file: each printed name its rows leave unlinked


@dataclass(frozen=True, slots=True)
class StepFiles:
    """A run's steps in Parquet files: every STEP_SCHEMA column, NaN where a figure is not a number, in the order
    they are to be stored (by step, repeated steps in the log's order)."""

    files: tuple[Path, ...] = ()
    rows: int = 0
    increasing: bool = True  # step rises strictly through the files: the stored order cannot show (ORDER BY step)


def _nothing_to_release() -> None:
    return None


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """One log, parsed and summarised, ready to store: what store.save_run writes, with nothing left to compute.

    `summary` is the stored summary JSON (steady-state figures, the log's own figures beside them, and why a
    figure is missing); `config` the stored configuration. The steps live in temporary files until close()
    (or the end of a `with` block).
    """

    file_name: str
    format: LogFormat
    content_sha256: str
    file_bytes: int
    config: Mapping[str, Any]
    summary: Mapping[str, Any]
    steps: StepFiles = StepFiles()
    warnings: tuple[str, ...] = ()
    results: tuple[ResultRecord, ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()
    skipped_lines: int = 0
    problems: tuple[str, ...] = ()  # the skipped lines (the first ones) as FILE:LINE: reason
    problems_left_out: Mapping[str, int] = field(default_factory=dict)  # the problems not listed, by kind
    ran_at: datetime | None = None  # when the run ran, by the log's own clock; None: the log printed no date
    release: Callable[[], None] = field(default=_nothing_to_release, repr=False, compare=False)

    def close(self) -> None:
        """Remove the step files; the run can no longer be stored after this."""
        self.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class InitReport:
    inserted: dict[str, int]
    unresolved: tuple[Any, ...] = ()  # seed.Unresolved rows: file, line, name, kind, nearest

    @property
    def changed(self) -> bool:
        return any(self.inserted.values())


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    content_sha256: str
    format: str
    file_name: str
    file_bytes: int | None
    ingested_at: datetime
    n_steps: int
    skipped_lines: int
    config: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    source_id: str | None = None
    note: str | None = None
    ran_at: datetime | None = None  # by the log's own clock; None: the log printed no date
