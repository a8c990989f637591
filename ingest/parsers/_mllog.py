"""MLLOG step events, read in bulk: the `tracked_stats` and `train_loss` lines (all but a few hundred of an MLPerf
result file) are matched and taken apart by Polars, and the rule that turns them into step rows runs on columns.

A line takes the bulk path only when its JSON has the plain shape every MLPerf logger writes (namespace, time_ms,
event_type, key, value, metadata in that order; numbers; strings without escapes); any other line is read with
json.loads by the parser and joins the same columns (`event_columns`), so both paths give the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ingest.parsers._common import finite_or_null, json_number

MLLOG = ":::MLLOG "
_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_STR = r'"[^"\\]*"'
_NUM_PAIR = rf'"[A-Za-z_][A-Za-z0-9_]*": {_NUM}'
_ANY_PAIR = rf'"[A-Za-z_][A-Za-z0-9_]*": (?:{_STR}|{_NUM}|null|true|false)'
# The plain shape, matched without captures (Polars runs it as a DFA; captures on 300-character lines were 10x slower).
_PLAIN_EVENT = (
    rf'^\{{"namespace": {_STR}, "time_ms": {_NUM}, "event_type": {_STR}, "key": '
    rf'(?:"tracked_stats", "value": \{{(?:{_NUM_PAIR}(?:, {_NUM_PAIR})*)?\}}|"train_loss", "value": {_NUM}), '
    rf'"metadata": \{{(?:{_ANY_PAIR}(?:, {_ANY_PAIR})*)?\}}\}}\s*$'
)
_NUMBER_AT = rf"^({_NUM})[,}}]"  # a number and what ends it, at the start of the text after a key
_LONGEST_NUMBER = 64  # a longer number sends its line to json.loads
_META = '"metadata": {'
_LOSS = '"key": "train_loss", "value": '
# what a step event's value (tracked_stats) and metadata hold, column name -> key
VALUE_KEYS = {"st": "train_step_time", "loss": "reduced_train_loss", "thr": "throughput", "mem": "max_memory_usage"}
META_KEYS = {"step_raw": "step", "samples": "samples_count", "lr": "lr"}
EVENT_SCHEMA: dict[str, pl.DataType] = {"i": pl.Int64(), "tracked": pl.Boolean()} | {
    name: pl.Float64() for name in (*VALUE_KEYS, *META_KEYS)}


@dataclass(frozen=True, slots=True)
class MllogChunk:
    """A chunk's step events as columns (EVENT_SCHEMA), and every other `:::` line as (position, text)."""

    events: pl.DataFrame
    other: list[tuple[int, str]]
    first_lineno: int


def _number_after(text: pl.Expr, label: str, inside: Callable[[pl.Expr], pl.Expr]) -> tuple[pl.Expr, pl.Expr]:
    """(the number after `label` where `inside(its position)` holds, whether the line must go to json.loads):
    a label found twice (json.loads keeps the last) or followed by no number it can end is left to it."""
    at = text.str.find(label, literal=True)
    number = text.str.slice(at + len(label), _LONGEST_NUMBER).str.extract(_NUMBER_AT, 1)
    unsure = (text.str.count_matches(label, literal=True) > 1) | (at.is_not_null() & number.is_null())
    return pl.when(inside(at).fill_null(False)).then(number.cast(pl.Float64, strict=False)), unsure


def split_chunk(lines: Sequence[str], first_lineno: int, also: Sequence[str] = ()) -> MllogChunk:
    """The chunk's plain step events as columns; the rest of its `:::` lines, and the lines holding any of the
    literals `also`, left for Python."""
    frame = pl.DataFrame({"line": pl.Series(lines, dtype=pl.String)}).with_row_index("i")
    frame = frame.with_columns(pl.col("i").cast(pl.Int64))
    line = pl.col("line")
    has_event = line.str.contains(":::", literal=True)
    marked = frame.filter(has_event)
    extra = frame.filter(~has_event & line.str.contains_any(list(also))) if also else frame.clear()
    at = line.str.find(MLLOG, literal=True)
    parts = marked.with_columns(line.str.slice(at + len(MLLOG)).alias("text"))
    text = pl.col("text")
    parts = parts.with_columns(text.str.contains(_PLAIN_EVENT).fill_null(False).alias("plain"))
    meta_at, loss_at = text.str.find(_META, literal=True), text.str.find(_LOSS, literal=True)
    tracked = loss_at.is_null()
    columns, unsure = {}, []
    in_value: Callable[[pl.Expr], pl.Expr] = lambda at: tracked & at.lt(meta_at)
    in_meta: Callable[[pl.Expr], pl.Expr] = lambda at: at.gt(meta_at)
    for name, key in (VALUE_KEYS | META_KEYS).items():
        columns[name], doubt = _number_after(text, f'"{key}": ', in_meta if name in META_KEYS else in_value)
        unsure.append(doubt)
    loss, doubt = _number_after(text, _LOSS, lambda _at: ~tracked)
    columns["loss"] = pl.coalesce(columns["loss"], loss)
    plain = parts.filter(pl.col("plain")).with_columns(pl.any_horizontal(*unsure, doubt).alias("unsure"))
    fast = plain.filter(~pl.col("unsure"))
    events = fast.select(pl.col("i").cast(pl.Int64), tracked.alias("tracked"),
                         *(columns[name].alias(name) for name in (*VALUE_KEYS, *META_KEYS)))
    events = pl.DataFrame({name: finite_or_null(events[name]) for name in EVENT_SCHEMA})
    other = pl.concat([parts.filter(~pl.col("plain")).select("i", "line"), plain.filter("unsure").select("i", "line"),
                       extra])
    other = other.sort("i")
    return MllogChunk(events, list(zip(other["i"].to_list(), other["line"].to_list(), strict=True)), first_lineno)


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
