"""Result files of `python -m perfledger.microbench` (JSON lines): a header object, then one measurement a line.

    {"perfledger_microbench": 1, "device_name": "NVIDIA H100 80GB HBM3", "accelerator_id": "h100-sxm", ...}
    {"kind": "block", "precision": "bf16", "batch": 8, "seq_len": 1024, "hidden": 1600, "heads": 25,
     "pass": "fwd+bwd", "median_s": 0.0035, "min_s": ..., "max_s": ..., "repeats": 10, "flops": ..., "tflops": ...}
    {"kind": "matmul", "precision": "bf16", "m": 8192, "n": 8192, "k": 8192, "median_s": ..., ...}

No steps: every measurement becomes a ResultRecord (evidence "measured"). TFLOPS are recomputed here from
the shape (perfledger.calc.block_flops) over the median time; the file's own figure is only cross-checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ingest.parsers._common import load_json
from ingest.parsers.base import LogParser
from perfledger.calc.block_flops import matmul_flops, transformer_block_flops
from perfledger.errors import ParseError
from perfledger.microbench import BLOCK_KINDS, FORMAT_VERSION, HEADER_KEY, PASSES
from perfledger.records import ParseSummary, ResultRecord, RunConfig, steps_frame
from perfledger.vocabulary import Evidence, LogFormat, Metric, Precision, Workload

GPT2_XL_LAYER = (1600, 25, 6400)  # hidden, heads, ffn hidden: the block is one GPT-2 XL layer
_PRECISIONS = frozenset(p.value for p in Precision)
_STATED_TFLOPS_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Row:
    """One measurement line, checked."""

    line: int
    kind: str  # block | matmul
    precision: str
    median_s: float
    min_s: float | None
    max_s: float | None
    repeats: int | None
    stated_tflops: float | None
    pass_: str | None = None
    batch: int | None = None
    seq_len: int | None = None
    hidden: int | None = None
    heads: int | None = None
    ffn_hidden: int | None = None
    m: int | None = None
    n: int | None = None
    k: int | None = None

    @property
    def flops(self) -> float:
        if self.kind == "matmul":
            return matmul_flops(_known(self.m), _known(self.n), _known(self.k))
        return transformer_block_flops(_known(self.batch), _known(self.seq_len), _known(self.hidden),
                                       self.ffn_hidden, backward=self.pass_ == "fwd+bwd")

    @property
    def tflops(self) -> float:
        return self.flops / self.median_s / 1e12


def header_from_line(line: str) -> dict[str, Any] | None:
    """The header object when `line` is a microbench header line, else None."""
    if f'"{HEADER_KEY}"' not in line:
        return None
    try:
        obj = load_json(line.lstrip("\ufeff"))
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and HEADER_KEY in obj else None


def row_from(obj: Mapping[str, Any], line: int) -> Row:
    """A measurement object -> Row; ValueError names the first field that does not fit."""
    kind = obj.get("kind")
    if kind not in BLOCK_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(BLOCK_KINDS)}")
    precision = obj.get("precision")
    if precision not in _PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {', '.join(sorted(_PRECISIONS))}")
    timing = {"line": line, "kind": kind, "precision": precision, "median_s": _positive(obj, "median_s"),
              "min_s": _optional_positive(obj, "min_s"), "max_s": _optional_positive(obj, "max_s"),
              "repeats": _optional_count(obj, "repeats"), "stated_tflops": _optional_positive(obj, "tflops")}
    if kind == "matmul":
        return Row(**timing, m=_count(obj, "m"), n=_count(obj, "n"), k=_count(obj, "k"))
    pass_ = obj.get("pass")
    if pass_ not in PASSES:
        raise ValueError(f"pass {pass_!r} is not one of {', '.join(PASSES)}")
    return Row(**timing, pass_=pass_, batch=_count(obj, "batch"), seq_len=_count(obj, "seq_len"),
               hidden=_count(obj, "hidden"), heads=_count(obj, "heads"), ffn_hidden=_optional_count(obj, "ffn_hidden"))


class MicrobenchParser(LogParser):
    format = LogFormat.MICROBENCH

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._header: dict[str, Any] | None = None
        self._rows: list[Row] = []

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return header_from_line(head.split("\n", 1)[0]) is not None

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        for offset, line in enumerate(lines):
            if line.strip():
                self._read(first_lineno + offset, line)
        return steps_frame([])

    def _read(self, lineno: int, line: str) -> None:
        if self._header is None and (header := header_from_line(line)) is not None:
            self._header = header
            return
        try:
            obj = load_json(line)
        except json.JSONDecodeError as exc:
            self.problem(lineno, f"not a JSON object ({exc.msg} at column {exc.colno}); the line was skipped")
            return
        if not isinstance(obj, dict):
            self.problem(lineno, "not a JSON object; the line was skipped")
        elif HEADER_KEY in obj:
            self.problem(lineno, "a second header line; the first one is used and this one was skipped")
        elif self._header is None:
            self.problem(lineno, "a measurement before the header line; the line was skipped")
        else:
            self._add(lineno, obj)

    def _add(self, lineno: int, obj: Mapping[str, Any]) -> None:
        try:
            self._rows.append(row_from(obj, lineno))
        except ValueError as exc:
            self.problem(lineno, f"{exc}; the measurement was skipped")

    def finish(self) -> ParseSummary:
        if self._header is None:
            raise ParseError(self.file_name, 1, f"the first line is not a perfledger microbench header ({HEADER_KEY})")
        if not self._rows:
            raise ParseError(self.file_name, None, "no measurement found after the header; the benchmark may have "
                             "stopped before its first result (see its output)")
        config = config_from_header(self._header, self._rows)
        return ParseSummary(
            format=self.format,
            config=config,
            problems=tuple(self.problems),
            warnings=tuple(self._warnings()),
            results=tuple(results_from(self._rows, config)),
            skipped_lines=self.skipped_lines,
            meta={"microbench_header": self._header},
        )

    def _warnings(self) -> list[str]:
        header = self._header or {}
        found = [str(w) for w in header.get("warnings") or []]
        if header.get(HEADER_KEY) != FORMAT_VERSION:
            found.append(f"written as microbench format {header.get(HEADER_KEY)!r}; this parser reads {FORMAT_VERSION}")
        found += [f"line {r.line}: the file says {r.stated_tflops:.6g} TFLOP/s, recomputed {r.tflops:.6g}; "
                  "the recomputed figure is stored" for r in self._rows if _disagrees(r)]
        return found


def config_from_header(header: Mapping[str, Any], rows: Sequence[Row]) -> RunConfig:
    """What the run states: device, software, and the block's shape when every block row shares one."""
    blocks = [r for r in rows if r.kind == "block"]
    shapes = {(r.hidden, r.heads, r.ffn_hidden or 4 * _known(r.hidden)) for r in blocks}
    hidden, heads, ffn = shapes.pop() if len(shapes) == 1 else (None, None, None)
    precisions = {r.precision for r in rows}
    seq_lens = {r.seq_len for r in blocks}
    device_name = header.get("device_name")
    return RunConfig(
        model=_model_id(hidden, heads, ffn),
        model_as_printed=None if hidden is None else _block_name(hidden, heads, ffn),
        accelerator=_accelerator_id(header),
        accelerator_as_printed=str(device_name) if device_name else None,
        n_devices=1,
        precision=precisions.pop() if len(precisions) == 1 else None,
        seq_len=seq_lens.pop() if len(seq_lens) == 1 else None,
        framework="PyTorch",
        framework_version=_text(header.get("torch_version")),
        workload=Workload.MICROBENCH.value,
        num_layers=1 if hidden is not None else None,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        num_attention_heads=heads,
    )


def results_from(rows: Sequence[Row], config: RunConfig) -> list[ResultRecord]:
    """One measured result per row; the fastest matmul of each precision's sweep says so in its note."""
    best = _best_matmul_lines(rows)
    return [_result(r, config, best.get(r.line)) for r in rows]


def _result(row: Row, config: RunConfig, sweep_size: int | None) -> ResultRecord:
    metric = Metric.MATMUL_TFLOPS if row.kind == "matmul" else Metric.MODEL_TFLOPS_PER_DEVICE
    block = row.kind == "block"
    return ResultRecord(
        metric=metric.value,
        value=row.tflops,
        unit=metric.unit,
        accelerator_id=config.accelerator,
        accelerator_as_printed=config.accelerator_as_printed,
        n_devices=1,
        framework=config.framework,
        framework_version=config.framework_version,
        model_id=_model_id(row.hidden, row.heads, row.ffn_hidden or 4 * row.hidden) if row.hidden else None,
        model_as_printed=_block_name(row.hidden, row.heads, row.ffn_hidden) if row.hidden else None,
        workload=Workload.MICROBENCH.value,
        precision=row.precision,
        seq_len=row.seq_len if block else None,
        micro_batch=row.batch if block else None,
        evidence=Evidence.MEASURED.value,
        locator=f"line {row.line}",
        note=_note(row, sweep_size),
    )


def _note(row: Row, sweep_size: int | None) -> str:
    timing = f"median of {row.repeats or '?'} timed calls (min {_ms(row.min_s)}, max {_ms(row.max_s)})"
    if row.kind == "matmul":
        best = f"; best of the {row.precision} sweep over {sweep_size} sizes" if sweep_size else ""
        return f"matmul {row.m}x{row.k} @ {row.k}x{row.n}, {timing}{best}"
    return f"{row.pass_}, batch {row.batch}: one transformer layer, seq {row.seq_len}, {timing}"


def _best_matmul_lines(rows: Sequence[Row]) -> dict[int, int]:
    """Line of the fastest matmul per precision -> how many sizes that precision's sweep had."""
    sweeps: dict[str, list[Row]] = {}
    for r in rows:
        if r.kind == "matmul":
            sweeps.setdefault(r.precision, []).append(r)
    return {max(sweep, key=lambda r: r.tflops).line: len(sweep) for sweep in sweeps.values() if len(sweep) > 1}


def _accelerator_id(header: Mapping[str, Any]) -> str | None:
    stated = _text(header.get("accelerator_id"))
    name = _text(header.get("device_name"))
    if stated is not None or name is None or header.get("backend") == "cpu":
        return stated
    from perfledger.microbench.run import resolve_accelerator_id  # the catalog may know the name by now

    return resolve_accelerator_id(name, str(header.get("backend")))[0]


def _model_id(hidden: int | None, heads: int | None, ffn: int | None) -> str | None:
    return "gpt2-xl" if (hidden, heads, ffn) == GPT2_XL_LAYER else None


def _block_name(hidden: int | None, heads: int | None, ffn: int | None) -> str:
    return f"transformer block (hidden {hidden}, {heads} heads, ffn {ffn or 4 * (hidden or 0)})"


def _disagrees(row: Row) -> bool:
    stated = row.stated_tflops
    return stated is not None and abs(stated - row.tflops) > _STATED_TFLOPS_TOLERANCE * row.tflops


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:.4g} ms"


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _known(value: int | None) -> int:
    if value is None:
        raise ValueError("a shape field is missing")
    return value


def _positive(obj: Mapping[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{key} {value!r} is not a positive number")
    return float(value)


def _optional_positive(obj: Mapping[str, Any], key: str) -> float | None:
    return None if obj.get(key) is None else _positive(obj, key)


def _count(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{key} {value!r} is not a positive integer")
    return value


def _optional_count(obj: Mapping[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _count(obj, key)


PARSER = MicrobenchParser
