"""torchtitan stdout: `[rank0]:[titan] 2025-... - root - INFO - step: 10  loss: 7.1  memory: 12.3GiB(40.1%)
tps: 5,123  tflops: 101.2  mfu: 10.3%` plus start-up lines (device mesh, model, batch sizes, GPU name).

The step line comes from whichever rank logs (the last pipeline stage under PP), so any `[rankN]` is read.
Per-step figures are kept as printed: tps is tokens/s per device, tflops per device, mfu becomes a fraction,
memory GiB is converted to GB (1 GiB = 1.073741824 GB). torchtitan does not print the step time, so
step_time_s stays null unless a line states it (`time:` / `step_time:` in seconds, as some forks print);
tokens per step = tps x step time x devices only when both are known.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from ingest import native
from ingest.parsers._common import INT64_MAX, step_frame_from_columns, to_int
from ingest.parsers.base import MAX_PARSED_LINE_CHARS, LogParser
from ingest.parsers.mlperf import resolve_accelerator_or_none
from ingest.text import TextChunk
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

GIB_TO_GB = 1.073741824
_NUM = r"(-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?|nan|inf)"
_STEP = re.compile(r"(?<![A-Za-z_])step:\s*(\d+)\s+(?P<rest>.*)$")
# _STEP for Polars (no look-behind), in two searches without a capture past the step number: the step, and the
# line less everything up to where _STEP's `rest` starts (4x faster than capturing `rest`; the same match).
_STEP_RX = r"(?:^|[^A-Za-z_])step:\s*(\d+)\s+"
_UP_TO_REST_RX = r"^.*?(?:^|[^A-Za-z_])step:\s*\d+\s+"
_VALIDATE = re.compile(r"validat\w*\s+step:")
_FIELDS = {
    "loss": re.compile(r"\bloss:\s*" + _NUM),
    "grad_norm": re.compile(r"\bgrad_norm:\s*" + _NUM),
    "memory_gib": re.compile(r"\bmemory:\s*" + _NUM + r"\s*GiB"),
    "tps": re.compile(r"\btps:\s*" + _NUM),
    "tflops": re.compile(r"\btflops:\s*" + _NUM),
    "mfu_pct": re.compile(r"\bmfu:\s*" + _NUM + r"\s*%"),
    "lr": re.compile(r"\blr:\s*" + _NUM),
    "time_s": re.compile(r"\b(?:step_time|time):\s*" + _NUM + r"\s*s\b"),
}
# A literal every line _config_line takes something from contains (a filter, so only those reach Python).
_CONFIG_LITERALS = ["parallelism:", "local batch size ", "total parameters", "Building ", " capacity: ",
                    "torchtitan version: ", "Training starts at step ", "Peak flops undefined for"]
_CONFIG_RX = "|".join(map(re.escape, _CONFIG_LITERALS))  # 5x faster than str.contains_any in Polars 2.1
_MESH = re.compile(r"parallelism:\s*(.*)$")
_MESH_DIM = re.compile(r"(\w+)=(\d+)")
_BATCH = re.compile(
    r"local batch size (\d+), global batch size (\d+), gradient accumulation steps (\d+), sequence length (\d+)"
)
_MODEL_BUILD = re.compile(r"Building (\S+) (\S+) with")
_MODEL_SIZE = re.compile(r"Model (\S+) (\S+) size: ([\d,]+) total parameters")
_GPU = re.compile(r"(?:CUDA|GPU|ROCm) capacity: (.{1,200}?) with ([\d.]+)GiB memory")
_VERSION = re.compile(r"torchtitan version: (\S+)")
_START = re.compile(r"Training starts at step (\d+)")


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What prepare() read of a chunk; positions are 0-based within it."""

    first_lineno: int
    long_lines: list[tuple[int, int]]  # (position, characters) of each line over MAX_PARSED_LINE_CHARS, emptied
    validation_lines: int
    config_positions: list[int]
    config_lines: list[str]
    fields: pl.DataFrame  # i, step (null past 64 bits) and each of _FIELDS, one row per step line


def _read_lines(lines: Sequence[str], positions: list[int] | None, first_lineno: int) -> _Prepared:
    """Step and configuration lines taken apart by Polars; positions: each line's place in its chunk (default: its
    index in lines)."""
    long = [(i, len(line)) for i, line in enumerate(lines) if len(line) > MAX_PARSED_LINE_CHARS] \
        if max(map(len, lines), default=0) > MAX_PARSED_LINE_CHARS else []
    if long:
        lines = [("" if len(line) > MAX_PARSED_LINE_CHARS else line) for line in lines]
    frame = pl.DataFrame({"line": pl.Series(lines, dtype=pl.String)})
    frame = frame.with_columns(pl.Series("i", positions, dtype=pl.Int64) if positions is not None
                               else pl.int_range(pl.len(), dtype=pl.Int64).alias("i"))
    if positions is not None:
        long = [(positions[i], n) for i, n in long]
    stepish = frame.filter(pl.col("line").str.contains("step:", literal=True))
    validation = stepish["line"].str.contains(_VALIDATE.pattern)
    marked = stepish.filter(~validation).with_columns(pl.col("line").str.extract(_STEP_RX, 1).alias("step"))
    is_step = marked["step"].is_not_null()
    config = pl.concat([frame.filter(~pl.col("line").str.contains("step:", literal=True)),
                        marked.filter(~is_step).select("line", "i")]).sort("i")
    config = config.filter(config["line"].str.contains(_CONFIG_RX))
    marked = marked.filter(is_step).with_columns(pl.col("line").str.replace(_UP_TO_REST_RX, "").alias("rest"))
    fields = marked.select(
        pl.col("i"), pl.col("step").cast(pl.Int64, strict=False),
        *(pl.col("rest").str.extract(rx.pattern, 1).str.replace_all(",", "", literal=True)
          .cast(pl.Float64, strict=False).alias(name) for name, rx in _FIELDS.items()))
    return _Prepared(first_lineno, long, int(validation.sum()), config["i"].to_list(), config["line"].to_list(),
                     fields)


class TorchtitanParser(LogParser):
    format = LogFormat.TORCHTITAN
    scanned = True  # step lines read by the compiled scanner where it is available (False: Polars only)

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return "[titan]" in head or ("torchtitan" in head and _STEP.search(head) is not None)

    @classmethod
    def claims(cls, line: str) -> bool:
        """A `[titan]` line, or a step line of torchtitan's shape (`step: 2  loss: 14.4  ...`) under another logger's
        prefix; the file's sniff still needs `torchtitan` named somewhere in its head."""
        return "[titan]" in line or ("loss:" in line and _STEP.search(line) is not None)

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.config: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.steps = 0
        self.validation_lines = 0
        self.saw_step_time = False

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        return self.feed_prepared(self.prepare(lines, first_lineno))

    def prepare(self, lines: Sequence[str], first_lineno: int) -> _Prepared:
        """The chunk's step lines taken apart by Polars (on the pipeline's reader threads: no parser state)."""
        return _read_lines(lines, None, first_lineno)

    def prepare_chunk(self, chunk: TextChunk) -> _Prepared:
        """prepare(), with the step lines the compiled scanner is sure of read by it and the rest by Polars."""
        scanner = native.titan_scan() if self.scanned else None
        found = scanner.scan(chunk.text, tuple(_CONFIG_LITERALS), MAX_PARSED_LINE_CHARS) if scanner else None
        if found is None:
            return self.prepare(chunk.lines(), chunk.first_lineno)
        import numpy as np  # only here, as in the Megatron scanner

        at_line, steps, values, (asked_at, asked) = found
        scanned = pl.DataFrame({"i": np.frombuffer(at_line, np.int64), "step": np.frombuffer(steps, np.int64)})
        scanned = scanned.with_columns(pl.Series(name, np.frombuffer(column, np.float64)).fill_nan(None)
                                       for name, column in zip(_FIELDS, values, strict=True))
        rest = _read_lines(asked, np.frombuffer(asked_at, np.int64).tolist(), chunk.first_lineno)
        fields = pl.concat([scanned, rest.fields]).sort("i") if rest.fields.height else scanned
        return replace(rest, fields=fields)

    def feed_prepared(self, prepared: _Prepared) -> pl.DataFrame:
        """Configuration lines, a handful, in Python and in order; then the chunk's step rows."""
        for i, length in prepared.long_lines:
            self.problem(prepared.first_lineno + i, f"line of {length:,} characters (over {MAX_PARSED_LINE_CHARS:,}) "
                                                    "skipped", kind="line too long")
        self.validation_lines += prepared.validation_lines
        mesh_from = self._config_lines(prepared.config_positions, prepared.config_lines)
        if prepared.fields.is_empty():
            return empty_steps()
        return self._rows(prepared.fields, prepared.first_lineno, mesh_from)

    def _config_lines(self, positions: list[int], lines: list[str]) -> int | None:
        """Reads them in order; returns the position of the line that set the device mesh, when one did."""
        mesh_from = None
        for position, line in zip(positions, lines, strict=True):
            had_mesh = "mesh" in self.meta
            self._config_line(line)
            if not had_mesh and "mesh" in self.meta:
                mesh_from = position
        return mesh_from

    def _rows(self, fields: pl.DataFrame, first_lineno: int, mesh_from: int | None) -> pl.DataFrame:
        """One step row per line with a loss, tps or tflops; tokens use the device count known at that line."""
        for i in fields.filter(pl.col("step").is_null())["i"].to_list():
            self.problem(first_lineno + i, "step number beyond 64 bits; skipped")
        fields = fields.filter(pl.col("step").is_not_null())
        usable = fields.select(pl.any_horizontal(pl.col("loss", "tps", "tflops").is_not_null())).to_series()
        for i in fields.filter(~usable)["i"].to_list():
            self.problem(first_lineno + i, "step line without loss, tps or tflops; skipped")
        fields = fields.filter(usable)
        self.steps += fields.height
        self.saw_step_time = self.saw_step_time or fields["time_s"].is_not_null().any()
        devices = self._devices()
        device_count: pl.Expr
        if mesh_from is not None:  # rows before the mesh line knew no device count
            device_count = pl.when(pl.col("i") > mesh_from).then(pl.lit(devices, dtype=pl.Float64))
        else:
            device_count = pl.lit(devices, dtype=pl.Float64)
        columns = fields.select(
            pl.col("step"), pl.col("time_s").alias("step_time_s"), pl.col("loss"), pl.col("lr"), pl.col("grad_norm"),
            pl.col("tps").alias("reported_tokens_per_s_per_device"),
            pl.col("tflops").alias("reported_tflops_per_device"),
            (pl.col("mfu_pct") / 100.0).alias("reported_mfu"),
            (pl.col("memory_gib") * GIB_TO_GB).alias("memory_gb"),
            (pl.col("tps") * pl.col("time_s") * device_count).alias("tokens"),
        )
        return step_frame_from_columns(columns.to_dict(), columns.height)

    def _devices(self) -> int | None:
        mesh = self.meta.get("mesh")
        if not mesh:
            return None
        product = 1
        for name in ("pp", "dp_replicate", "dp_shard", "cp", "tp"):
            size = to_int(mesh.get(name, 1))
            product *= size if size is not None and size > 0 else 1
        return product if product <= INT64_MAX else None

    def _config_line(self, line: str) -> None:
        if "[titan]" not in line and "torchtitan" not in line and " - root - " not in line:
            return
        if (m := _MESH.search(line)) is not None and "mesh" not in self.meta:
            self.meta["mesh"] = {k: n for k, v in _MESH_DIM.findall(m.group(1)) if (n := to_int(v)) is not None}
        elif (m := _BATCH.search(line)) is not None:
            micro, gbs, ga, seq = (to_int(g) for g in m.groups())
            self.config.update(micro_batch=micro, global_batch=gbs, grad_accum=ga, seq_len=seq)
        elif (m := _MODEL_SIZE.search(line)) is not None:
            self.config.setdefault("model_as_printed", f"{m.group(1)} {m.group(2)}")
            self.meta["total_parameters"] = to_int(m.group(3), thousands=True)
        elif (m := _MODEL_BUILD.search(line)) is not None:
            self.config.setdefault("model_as_printed", f"{m.group(1)} {m.group(2)}")
        elif (m := _GPU.search(line)) is not None:
            self.config.setdefault("accelerator_as_printed", m.group(1).strip())
        elif (m := _VERSION.search(line)) is not None:
            self.config["framework_version"] = m.group(1)
        elif (m := _START.search(line)) is not None:
            self.meta["training_starts_at_step"] = to_int(m.group(1))
        elif "Peak flops undefined for" in line:
            self.meta["mfu_peak_fallback"] = line.split("Peak flops undefined for:", 1)[-1].split(",")[0].strip()

    def finish(self) -> ParseSummary:
        if self.steps == 0:
            raise ParseError(self.file_name, None, "no torchtitan step lines (`step: N  loss: ...  tps: ...`) found")
        return ParseSummary(
            format=self.format,
            config=self._run_config(),
            problems=tuple(self.problems),
            warnings=tuple(self._warnings()),
            skipped_lines=self.skipped_lines,
            meta={**self.meta, "validation_lines": self.validation_lines},
        )

    def _run_config(self) -> RunConfig:
        mesh: dict[str, int] = self.meta.get("mesh", {})
        accelerator = self.config.get("accelerator_as_printed")
        dp = to_int(mesh.get("dp_replicate", 1) * mesh.get("dp_shard", 1)) if mesh else None  # None past 64 bits
        return RunConfig(
            model=self.config.get("model_as_printed"),
            model_as_printed=self.config.get("model_as_printed"),
            accelerator=resolve_accelerator_or_none(accelerator),
            accelerator_as_printed=accelerator,
            n_devices=self._devices(),
            seq_len=self.config.get("seq_len"),
            global_batch=self.config.get("global_batch"),
            micro_batch=self.config.get("micro_batch"),
            grad_accum=self.config.get("grad_accum"),
            tp=mesh.get("tp"),
            pp=mesh.get("pp"),
            dp=dp,
            cp=mesh.get("cp"),
            ep=mesh.get("ep"),
            framework="torchtitan",
            framework_version=self.config.get("framework_version"),
            strategy="fsdp" if mesh.get("dp_shard", 1) > 1 else None,
        )

    def _warnings(self) -> list[str]:
        out = ["memory_gb is torchtitan's GiB converted to GB (x 1.073741824)"]
        if not self.saw_step_time:
            out.append("torchtitan prints no step time: step_time_s is empty; throughput comes from the logged tps")
        if "mfu_peak_fallback" in self.meta:
            out.append(
                f"torchtitan did not know the peak FLOPS of {self.meta['mfu_peak_fallback']}; its mfu uses a "
                "fallback peak (A100), so reported_mfu is not relative to this device"
            )
        return out


PARSER = TorchtitanParser
