"""MLLOG step events, read in bulk: the `tracked_stats` and `train_loss` lines (all but a few hundred of an MLPerf
result file) are decoded by msgspec into the few fields a step needs, and the rule that turns them into step rows
runs on columns.

msgspec reads only what it is sure of: a line it refuses (NaN, a number out of range, a string where a number
belongs, any other key) is read with json.loads by the parser and joins the same columns (`event_columns`), so both
paths give the same rows; json.loads is the definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import polars as pl

from ingest import native
from ingest.parsers._common import finite_or_null, json_number
from ingest.parsers.base import MAX_PARSED_LINE_CHARS

MLLOG = ":::MLLOG "
# what a step event's value (tracked_stats) and metadata hold, column name -> key
VALUE_KEYS = {"st": "train_step_time", "loss": "reduced_train_loss", "thr": "throughput", "mem": "max_memory_usage"}
META_KEYS = {"step_raw": "step", "samples": "samples_count", "lr": "lr"}
EVENT_SCHEMA: dict[str, pl.DataType] = {"i": pl.Int64(), "tracked": pl.Boolean()} | {
    name: pl.Float64() for name in (*VALUE_KEYS, *META_KEYS)}


class _Tracked(msgspec.Struct, gc=False):
    train_step_time: float | None = None
    reduced_train_loss: float | None = None
    throughput: float | None = None
    max_memory_usage: float | None = None


class _Meta(msgspec.Struct, gc=False):
    step: float | None = None
    samples_count: float | None = None
    lr: float | None = None


class _Event(msgspec.Struct, gc=False):
    """The fields of an MLLOG event a step row needs; the others are checked as JSON and passed over."""

    key: str
    value: _Tracked | float | None = None
    metadata: _Meta | None = None


_decode_event: Callable[[str], _Event] = msgspec.json.Decoder(_Event).decode
_NO_META = _Meta()


@dataclass(frozen=True, slots=True)
class MllogChunk:
    """A chunk's step events as columns (EVENT_SCHEMA), and every other `:::` line as (position, text)."""

    events: pl.DataFrame
    other: list[tuple[int, str]]
    first_lineno: int


def split_chunk(lines: Sequence[str], first_lineno: int, also: Sequence[str] = (), *,
                bulk: bool = True) -> MllogChunk:
    """The chunk's step events msgspec reads as columns; the rest of its `:::` lines, and the lines holding any of
    the literals `also`, left for Python. Without bulk, every `:::` line is left for Python (the definition)."""
    at_line: list[int] = []
    steps: list[_Event] = []
    other: list[tuple[int, str]] = []
    decode, keep, keep_at = _decode_event, steps.append, at_line.append
    for i, line in enumerate(lines):
        at = line.find(MLLOG)
        if at < 0 or not bulk:
            if ":::" in line or also and any(literal in line for literal in also):
                other.append((i, line))
            continue
        try:
            event = decode(line[at + len(MLLOG):])
        except (msgspec.DecodeError, RecursionError):  # nesting deeper than msgspec recurses: json.loads says why
            other.append((i, line))
            continue
        if _is_step(event):
            keep_at(i)
            keep(event)
        else:
            other.append((i, line))
    return MllogChunk(_event_frame(at_line, steps), other, first_lineno)


def scanned_chunk(text: str, first_lineno: int, also: Sequence[str]) -> MllogChunk | None:
    """split_chunk of the chunk's text by the compiled scanner (ingest/native/mllog_scan.c), which takes the step
    events it is sure json.loads reads the same and hands back every other line; None where the scanner is not
    available or declines the chunk (not ASCII, a carriage return, a line over MAX_PARSED_LINE_CHARS)."""
    scanner = native.mllog_scan()
    if scanner is None or (found := scanner.scan(text, tuple(also), MAX_PARSED_LINE_CHARS)) is None:
        return None
    import numpy as np  # only here, as in the Megatron scanner: a process reading no MLPerf log does not pay it

    _, at_line, tracked, values, (asked_at, asked) = found
    columns = {"i": pl.Series("i", np.frombuffer(at_line, np.int64)),
               "tracked": pl.Series("tracked", np.frombuffer(tracked, np.uint8), dtype=pl.Boolean)}
    columns |= {name: finite_or_null(pl.Series(name, np.frombuffer(column, np.float64)))
                for name, column in zip((*VALUE_KEYS, *META_KEYS), values, strict=True)}
    other = list(zip(np.frombuffer(asked_at, np.int64).tolist(), asked, strict=True))
    return MllogChunk(pl.DataFrame(columns), other, first_lineno)


def _is_step(event: _Event) -> bool:
    """A step event msgspec read whole: tracked_stats with a dict value, or train_loss with a number or null."""
    tracked = type(event.value) is _Tracked
    return event.key == "tracked_stats" and tracked or event.key == "train_loss" and not tracked


def _event_frame(at_line: list[int], steps: list[_Event]) -> pl.DataFrame:
    """The step events as EVENT_SCHEMA columns; at_line holds each one's position in the chunk."""
    values = [_as_tracked(event.value) for event in steps]
    metas = [event.metadata or _NO_META for event in steps]
    columns: dict[str, list[Any]] = {"i": at_line, "tracked": [event.key == "tracked_stats" for event in steps]}
    columns |= {name: [getattr(v, key) for v in values] for name, key in VALUE_KEYS.items()}
    columns |= {name: [getattr(m, key) for m in metas] for name, key in META_KEYS.items()}
    return pl.DataFrame({name: finite_or_null(pl.Series(name, columns[name], dtype=dtype))
                         for name, dtype in EVENT_SCHEMA.items()})


def _as_tracked(value: _Tracked | float | None) -> _Tracked:
    return value if isinstance(value, _Tracked) else _Tracked(reduced_train_loss=value)


def event_columns(i: int, key: str, value: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """One step event read by json.loads as a row of EVENT_SCHEMA (the bulk path's columns)."""
    tracked = key == "tracked_stats"
    values: dict[str, Any] = value if tracked else {"reduced_train_loss": value}
    out: dict[str, Any] = {"i": i, "tracked": tracked}
    out |= {name: json_number(values.get(k)) for name, k in VALUE_KEYS.items()}
    out |= {name: json_number(meta.get(k)) for name, k in META_KEYS.items()}
    return out


@dataclass(slots=True)
class StepState:
    """What the rule below carries from chunk to chunk."""

    saw_step_time: bool = False
    step_counts_samples: bool | None = None  # decided by the first non-zero step counter
    last_timed_step: int | None = None  # the highest step stored with a step time
    block_rows: int = 0  # timed rows not past that step: block averages (or repeats), not steps


def _rounded(x: pl.Expr) -> pl.Expr:
    """round() then to_int(): half to even, null past 64 bits."""
    return x.round(0, mode="half_to_even").cast(pl.Int64, strict=False)


def step_rows(events: pl.DataFrame, state: StepState, gbs: pl.Expr, seq: pl.Expr,
              devices: int | None) -> tuple[pl.DataFrame, pl.Series]:
    """Step events in line order -> (step rows in STEP_SCHEMA column names, the positive throughputs logged).

    gbs and seq are the global batch and sequence length each event's line saw (null before they were logged).
    A tracked_stats event is a step when it has a step time or a loss, or only a throughput while no step time was
    seen yet (warmup_time, validation_* are not steps). Steps are optimizer steps: samples_count / global batch
    when the event has it, else the `step` counter, itself divided by the batch when the first non-zero counter
    of the file is a multiple of it.

    A timed row whose step is not past every timed step before it is a block average (MLPerf v5.1 logs one per
    block, after the block's steps, some with the block's own sample count as if it were a step): it is not stored
    as a step (state.block_rows counts them). A throughput (samples/s, for the whole system) is kept on its row
    as tokens/s per device when the sequence length and the device count are known.
    """
    ev = events.with_columns(gbs.cast(pl.Float64).alias("gbs"), seq.cast(pl.Float64).alias("seq"))
    thr = ev.filter(pl.col("tracked") & (pl.col("thr") > 0))["thr"]
    saw = pl.lit(state.saw_step_time) | (pl.col("tracked") & pl.col("st").is_not_null()).cast(pl.Int8).cum_max().cast(pl.Boolean)
    step_time = pl.col("st").is_not_null() | pl.col("loss").is_not_null() | (pl.col("thr").is_not_null() & ~saw)
    ev = ev.with_columns(saw.alias("saw")).filter(~pl.col("tracked") | step_time)
    if ev.height and ev["saw"][-1]:
        state.saw_step_time = True
    by_samples = pl.col("samples").is_not_null() & (pl.col("gbs") > 0)
    decides = ~by_samples & (pl.col("step_raw") > 0)
    counts = pl.lit(state.step_counts_samples, dtype=pl.Boolean)
    if state.step_counts_samples is None and (first := ev.select(decides.arg_true().first()).item()) is not None:
        row = ev.row(first, named=True)
        state.step_counts_samples = bool(row["gbs"]) and row["step_raw"] % row["gbs"] == 0
        counts = pl.when(pl.int_range(pl.len()) >= first).then(pl.lit(state.step_counts_samples))
    divided = counts.fill_null(False) & (pl.col("gbs") > 0)
    step = (pl.when(by_samples).then(_rounded(pl.col("samples") / pl.col("gbs")))
            .when(divided).then(_rounded(pl.col("step_raw") / pl.col("gbs")))
            .otherwise(_rounded(pl.col("step_raw"))))
    filled = pl.when(pl.col("st").is_null() & (pl.col("thr") != 0) & (pl.col("gbs") > 0)) \
        .then(pl.col("gbs") / pl.col("thr")).otherwise(pl.col("st"))
    tracked = pl.col("tracked")
    per_device = pl.col("thr") * pl.col("seq") / devices if devices else pl.lit(None, dtype=pl.Float64)
    rows = ev.select(
        step.alias("step"),
        pl.when(tracked).then(filled).alias("step_time_s"),
        pl.col("loss"),
        pl.when(~tracked).then(pl.col("lr")).alias("lr"),
        pl.when(tracked).then(pl.col("mem")).alias("memory_gb"),
        pl.when(tracked).then(pl.col("gbs")).alias("samples"),
        pl.when(tracked).then(pl.col("gbs") * pl.col("seq")).alias("tokens"),
        pl.when(tracked & (pl.col("thr") > 0)).then(per_device).alias("reported_tokens_per_s_per_device"),
    ).filter(pl.col("step").is_not_null())
    return _without_block_rows(rows, state), thr


def _without_block_rows(rows: pl.DataFrame, state: StepState) -> pl.DataFrame:
    timed = pl.col("step_time_s").is_not_null()
    floor = state.last_timed_step if state.last_timed_step is not None else -(2**63)
    before = pl.when(timed).then(pl.col("step")).cum_max().forward_fill().shift(1).fill_null(floor)
    marked = rows.with_columns((timed & (pl.col("step") <= pl.max_horizontal(before, pl.lit(floor)))).alias("block"))
    state.block_rows += int(marked["block"].sum())
    top = marked.filter(timed)["step"].max()
    if top is not None:
        state.last_timed_step = max(floor, int(top))  # type: ignore[arg-type]
    return marked.filter(~pl.col("block")).drop("block")
