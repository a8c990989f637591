"""The structured-metrics reader's core: records of named values -> step rows, through the key vocabulary.

A record is one logged row (a JSON line, a CSV row, a TensorBoard step, a W&B history row, a Composer batch
block, a console line of `name: value` pairs): names as the framework logs them, values as numbers or text.
perfledger.metric_keys says which name feeds which ledger column and in what unit; nothing here knows a framework.

What becomes a step: a record with a step number and a training figure (loss, learning rate, gradient norm, a step
time or a printed speed). Set aside and counted: records without one (media), evaluation records (an `eval` key),
end-of-run summaries (a `summary` key such as `train_runtime`), the same step written again (a second rank, a
repeated row) and the steps a resumed job logs again (a step not above the highest of its launch). A step back to
the file's first step or below starts a launch of its own (several runs in one file): its rows carry its number
(`launch`, null for the first), and its lines are kept (meta `launch_lines`) where a reader gives them (LINE).

Step time, from the first source a record has: a logged step time; else a time since the previous record
(`interval_s`), a cumulative clock (`elapsed_s`: a run time, "0:02:12", "1m 42s") or a timestamp (`wall_time`)
differenced between two training records, over the steps between them. A difference that is not positive (a clock
that stepped back) gives none. Tokens and samples per step: logged per step (the batch in force, so a ramp-up is
kept), else the growth of a cumulative counter over the steps between, else a logged rate x the step time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from ingest.parsers._common import step_frame_from_columns
from ingest.parsers._times import duration_seconds, timestamp_seconds
from perfledger.metric_keys import KeyMapping, KeyRow, Vocabulary, load_vocabulary
from perfledger.records import ResultRecord
from perfledger.vocabulary import Metric

LINE = "\x00line"  # a record's line in the file, as its reader gives it (no logged name can be spelled so)
SUMMARY_RATES = ("samples_per_s", "tokens_per_s")  # an end-of-run record's figures kept as results
TRAINING = ("loss", "lr", "grad_norm", "step_time_s", "reported_tflops_per_device", "reported_mfu",
            "reported_tokens_per_s_per_device")
# what a step time was taken from (ParseSummary.meta["step_time_source"]: source -> steps), in words
STEP_TIME_SOURCES = {"logged": "logged per step",
                     "interval": "the time each record gives since the one before, over the steps between them",
                     "elapsed": "wall clock from the run time the records carry, over the steps between them",
                     "wall": "wall clock from the records' timestamps, over the steps between them",
                     "rate": "the global batch over the logged throughput (samples/s)",
                     "block": "each block's time (MLLOG block_start to block_stop) over its steps"}


def step_time_source_text(counts: Mapping[str, int]) -> str | None:
    """Where a run's step times came from, in words (with each source's step count when there are several); None
    when none is said."""
    said = [(STEP_TIME_SOURCES[k], n) for k, n in counts.items() if k in STEP_TIME_SOURCES]
    if len(said) == 1:  # the one source (its count may be unknown: 0)
        return said[0][0]
    said = [(text, n) for text, n in said if n]
    return "; ".join(f"{text} ({n:,} steps)" for text, n in said) or None


_LEADING_NUMBER = r"^\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))"
_MULTIPLIERS = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _number(name: str) -> pl.Expr:
    """A column's values as numbers: numbers as they are; text by its leading number ("146ms" -> 146, "2.3K" ->
    2300, "10/438" -> 10)."""
    text = pl.col(name).cast(pl.String)
    number = text.str.extract(_LEADING_NUMBER, 1).cast(pl.Float64, strict=False)
    suffix = text.str.extract(_LEADING_NUMBER + r"\s*([KMGTB])(?:[^A-Za-z]|$)", 2)
    return number * suffix.replace_strict(_MULTIPLIERS, default=1.0, return_dtype=pl.Float64)


# a time printed with its unit glued on ("dt: 5.04ms", "iter_time=1.2s"): the printed unit wins over the row's
_TIME_SUFFIXES = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "min": 60.0,
                  "h": 3600.0}
_TIME_ROW_UNITS = frozenset({"s", "ms", "us", "min", "h"})


def _time_with_its_unit(name: str, row: KeyRow) -> pl.Expr:
    """A time column read as text: seconds by the unit printed after the number when there is one, else by the
    row's unit."""
    text = pl.col(name).cast(pl.String)
    glued = text.str.extract(_LEADING_NUMBER + r"\s*(ns|us|µs|ms|secs?|s|min|h)\s*$", 2)
    factor = glued.replace_strict(_TIME_SUFFIXES, default=None, return_dtype=pl.Float64)
    return _number(name) * pl.coalesce(factor, pl.lit(row.factor))


def _converted(name: str, row: KeyRow, dtype: pl.DataType) -> pl.Expr:
    """One present key's values in the ledger's unit."""
    unit = row.unit
    if unit == "duration":
        text = pl.col(name).cast(pl.String)
        return text.map_elements(duration_seconds, return_dtype=pl.Float64, skip_nulls=True)
    if unit == "n/total":
        return pl.col(name).cast(pl.String).str.extract(r"^\s*(\d+)", 1).cast(pl.Float64, strict=False)
    if row.column == "wall_time" and not dtype.is_numeric():  # a timestamp printed as text, in any common form
        return pl.col(name).cast(pl.String).map_elements(lambda t: timestamp_seconds(t, row.factor),
                                                         return_dtype=pl.Float64, skip_nulls=True)
    if unit == "1/s":
        value = _number(name)
        return pl.when(value > 0).then(1.0 / value)
    if unit in _TIME_ROW_UNITS and not dtype.is_numeric():
        return _time_with_its_unit(name, row)
    value = pl.col(name).cast(pl.Float64) if dtype.is_numeric() else _number(name)
    if row.column == "reported_mfu":
        return pl.when(value > 0).then(value * row.factor)
    return value * row.factor if row.factor != 1.0 else value


def _column(mapping: KeyMapping, column: str, schema: pl.Schema) -> pl.Expr | None:
    exprs = [_converted(name, row, schema[name]) for name, row in mapping.keys_of(column) if name in schema]
    if not exprs:
        return None
    return pl.coalesce(exprs) if len(exprs) > 1 else exprs[0]


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last training record of the previous chunk: what the first record of the next one is measured from."""

    step: int | None = None
    elapsed_s: float | None = None
    wall_time: float | None = None
    tokens_total: float | None = None
    samples_total: float | None = None
    first_step: int | None = None  # of the file's first training record
    highest_step: int | None = None  # of every training record so far


@dataclass(slots=True)
class StepRecords:
    """The state of one file's records across chunks: read with `steps(frame)`, then ask what was set aside."""

    vocabulary: Vocabulary = field(default_factory=load_vocabulary)
    frameworks: tuple[str, ...] = ()  # the file's frameworks as its reader recognised them (data/frameworks.csv)
    anchor: Anchor = field(default_factory=Anchor)
    names_seen: set[str] = field(default_factory=set)
    set_aside: Counter[str] = field(default_factory=Counter)
    step_time_sources: Counter[str] = field(default_factory=Counter)
    micro_batch: int | None = None
    numbered_by_row: int = 0  # records without a step key, numbered by their order
    _launch_highest: int | None = None  # set by _without_resumed for _advance
    launch: int = 1  # the launch the records now read belong to
    launch_lines: dict[int, list[int]] = field(default_factory=dict)  # each launch's first and last record line
    clock_only_steps: bool = False  # a file that logs no training figure: a clock makes a step (console reports)
    rows: int = 0
    first_wall_time: float | None = None  # the earliest record timestamp (epoch seconds): when the run ran
    nan_losses: int = 0  # steps whose loss is NaN (a diverged run is still a run)
    summary_figures: dict[str, float] = field(default_factory=dict)  # rates of the end-of-run summary record

    def known(self, name: str) -> bool:
        return self.vocabulary.is_known(name)

    def mapping(self) -> KeyMapping:
        return self.vocabulary.mapping(self.names_seen, self.frameworks)

    @property
    def framework(self) -> str | None:
        return self.mapping().framework

    def steps(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The training records of one chunk (a frame of logged names) as a STEP_SCHEMA frame."""
        self.names_seen.update(c for c in frame.columns if self.known(c))
        if frame.height == 0:
            return step_frame_from_columns({}, 0)
        mapping = self.mapping()
        schema = frame.schema
        columns = {c: e for c in mapping.by_column if c not in ("-",) and (e := _column(mapping, c, schema)) is not None}
        self._remember_micro_batch(frame, columns.get("micro_batch"))
        training = self._training(mapping, columns, clock_only=self.clock_only_steps)
        if not training:
            self.set_aside["record without a training figure"] += frame.height
            return step_frame_from_columns({}, 0)
        step = columns.pop("step", None)
        if step is None:
            step = pl.int_range(1, pl.len() + 1) + self.numbered_by_row
            self.numbered_by_row += frame.height
        summary = columns.pop("summary", pl.lit(None, pl.Float64))
        evaluation = columns.pop("eval", pl.lit(None, pl.Float64)).is_not_null() & (
            columns["loss"].is_null() if "loss" in columns else pl.lit(True))
        rows = frame.select(
            pl.when((step == step.round(0)) & (step.abs() < 2.0**62)).then(step).cast(pl.Int64).alias("_s"),
            *(e.alias(c) for c, e in columns.items()),
            (pl.any_horizontal(training) & ~evaluation).alias("_training"),
            evaluation.alias("_eval"), summary.is_not_null().alias("_summary"),
            *([pl.col(LINE).cast(pl.Int64, strict=False).alias("_line")] if LINE in schema else []))
        self._keep_summary(rows)
        rows = self._set_aside(rows)
        if rows.height == 0:
            return step_frame_from_columns({}, 0)
        if "loss" in rows.columns:
            self.nan_losses += int(rows["loss"].is_nan().sum())
        self._note_wall_time(rows)
        rows = self._timed(rows)
        rows = self._counted(rows)
        self._advance(rows)
        self.rows += rows.height
        self._note_launch_lines(rows)
        out = {c: rows[c] for c in rows.columns if not c.startswith("_")}
        out["step"] = rows["_s"]
        if self.launch > 1:
            out["launch"] = rows.select(pl.when(pl.col("_launch") > 1).then(pl.col("_launch"))).to_series()
        if "elapsed_s" in rows.columns and _bar_timed(mapping, schema):
            out["clock_s"] = rows["elapsed_s"]
        return step_frame_from_columns(out, rows.height)

    def _keep_summary(self, rows: pl.DataFrame) -> None:
        """The first end-of-run summary record's throughput (samples/s, tokens/s over the whole run)."""
        rates = [c for c in SUMMARY_RATES if c in rows.columns and c not in self.summary_figures]
        if not rates or not rows["_summary"].any():
            return
        first = rows.filter(pl.col("_summary")).row(0, named=True)
        self.summary_figures.update({c: float(first[c]) for c in rates
                                     if first[c] is not None and math.isfinite(first[c]) and first[c] > 0})

    def summary_results(self, printed: Mapping[str, str], *, locator: str) -> tuple[ResultRecord, ...]:
        """The throughput a summary printed outside any record (`train_samples_per_second = 3.2` lines), with that of
        every summary record read, as the log's own results over the whole run."""
        if printed:
            mapping = self.vocabulary.mapping(printed, self.frameworks)
            frame = pl.DataFrame({k: [v] for k, v in printed.items()}, schema=dict.fromkeys(printed, pl.String))
            for column in SUMMARY_RATES:
                if column not in self.summary_figures and (e := _column(mapping, column, frame.schema)) is not None:
                    value = frame.select(e).item()
                    if value is not None and math.isfinite(value) and value > 0:
                        self.summary_figures[column] = float(value)
        return tuple(ResultRecord(metric=column, value=value, unit=Metric(column).unit, framework=self.framework,
                                  evidence="reported", locator=locator,
                                  note="the log's own figure over the whole run (warm-up and any evaluation "
                                       "inside training included)")
                     for column, value in self.summary_figures.items())

    def nan_note(self) -> str | None:
        return f"{self.nan_losses:,} logged steps have loss nan (the run diverged)" if self.nan_losses else None

    def _note_wall_time(self, rows: pl.DataFrame) -> None:
        if "wall_time" in rows.columns and (first := rows["wall_time"].min()) is not None:
            seen = float(first)  # type: ignore[arg-type]
            self.first_wall_time = seen if self.first_wall_time is None else min(self.first_wall_time, seen)

    @staticmethod
    def _training(mapping: KeyMapping, columns: dict[str, pl.Expr], *, clock_only: bool) -> list[pl.Expr]:
        """What makes a record a training step: a training figure; with clock_only, in a file that logs none anywhere
        (a console report of the step and the time so far), a clock in a record that is not an evaluation's."""
        if not clock_only or any(c in mapping.by_column for c in TRAINING):
            return [columns[c].is_not_null() for c in TRAINING if c in columns]
        clocks = [columns[c].is_not_null() for c in ("interval_s", "elapsed_s", "wall_time") if c in columns]
        if not clocks:
            return []
        not_eval = columns["eval"].is_null() if "eval" in columns else pl.lit(True)
        return [pl.any_horizontal(clocks) & not_eval]

    def _set_aside(self, rows: pl.DataFrame) -> pl.DataFrame:
        counts = rows.select(
            (~pl.col("_training") & ~pl.col("_eval")).sum().alias("record without a training figure"),
            pl.col("_eval").sum().alias("evaluation record"),
            (pl.col("_training") & pl.col("_summary")).sum().alias("end-of-run summary record"),
            (pl.col("_training") & ~pl.col("_summary") & pl.col("_s").is_null()).sum().alias(
                "record without a step number")).row(0, named=True)
        self.set_aside.update({k: v for k, v in counts.items() if v})
        rows = rows.filter(pl.col("_training") & ~pl.col("_summary") & pl.col("_s").is_not_null())
        previous = _previous("_s", self.anchor.step)
        repeated = rows.select((pl.col("_s") == previous).fill_null(False)).to_series()
        if repeated.any():
            self.set_aside["the same step written again (another rank or a repeated row)"] += int(repeated.sum())
            rows = rows.filter(~repeated)
        return self._without_resumed(rows)

    def _without_resumed(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Rows less the steps a resume logs again: within a launch, a step not above the highest so far (a job
        resumed from its step-900 checkpoint after dying at 1000 logs 900-1000 twice; the first are kept). A step
        back to the file's first step or below starts a new launch, kept (perfledger.calc.launches)."""
        if rows.height == 0:
            return rows
        first = self.anchor.first_step if self.anchor.first_step is not None else rows["_s"][0]
        restart = (pl.col("_s") <= first) & (pl.int_range(pl.len()) > 0 if self.anchor.step is None else pl.lit(True))
        marked = rows.with_columns(restart.cum_sum().alias("_launch"))
        before = pl.col("_s").shift(1).cum_max().over("_launch")
        if self.anchor.highest_step is not None:  # the launch the previous chunk ended in goes on
            carried = pl.when(pl.col("_launch") == 0).then(pl.lit(self.anchor.highest_step))
            before = pl.max_horizontal(before, carried)
        again = marked.select(((pl.col("_s") > first) & (pl.col("_s") <= before)).fill_null(False)).to_series()
        started = int(marked["_launch"].max())  # type: ignore[arg-type]
        highest = marked.filter(pl.col("_launch") == started)["_s"].max()
        self._launch_highest = int(highest) if started else None  # type: ignore[arg-type]
        marked = marked.with_columns(pl.col("_launch") + self.launch)
        self.launch += started
        if again.any():
            self.set_aside["a step logged again after a resume"] += int(again.sum())
            marked = marked.filter(~again)
        return marked

    def _note_launch_lines(self, rows: pl.DataFrame) -> None:
        """Each launch's first and last record line, where the reader gave them."""
        if "_line" not in rows.columns:
            return
        spans = rows.group_by("_launch").agg(pl.col("_line").min().alias("a"), pl.col("_line").max().alias("b"))
        for launch, a, b in spans.drop_nulls().iter_rows():
            seen = self.launch_lines.setdefault(int(launch), [int(a), int(b)])
            seen[0], seen[1] = min(seen[0], int(a)), max(seen[1], int(b))

    def _timed(self, rows: pl.DataFrame) -> pl.DataFrame:
        anchor = self.anchor
        steps = pl.col("_s") - _previous("_s", anchor.step)
        sources: list[tuple[str, pl.Expr]] = []
        if "step_time_s" in rows.columns:
            sources.append(("logged", pl.when(pl.col("step_time_s") > 0).then(pl.col("step_time_s"))))
        if "interval_s" in rows.columns:
            sources.append(("interval", pl.when((steps > 0) & (pl.col("interval_s") > 0))
                            .then(pl.col("interval_s") / steps)))
        for source, column, first in (("elapsed", "elapsed_s", anchor.elapsed_s),
                                      ("wall", "wall_time", anchor.wall_time)):
            if column in rows.columns:
                grown = pl.col(column) - _previous(column, first)
                sources.append((source, pl.when((steps > 0) & (grown > 0)).then(grown / steps)))
        if not sources:
            return rows
        rows = rows.with_columns(*(e.alias(f"_t_{s}") for s, e in sources))
        none_before = pl.lit(True)
        for source, _ in sources:  # count the records each source timed: the first source a record has
            timed = pl.col(f"_t_{source}").is_not_null()
            if used := rows.select((timed & none_before).sum()).item():
                self.step_time_sources[source] += used
            none_before = none_before & ~timed
        return rows.with_columns(pl.coalesce([pl.col(f"_t_{s}") for s, _ in sources]).alias("step_time_s"))

    def _counted(self, rows: pl.DataFrame) -> pl.DataFrame:
        anchor = self.anchor
        steps = pl.col("_s") - _previous("_s", anchor.step)
        time = pl.col("step_time_s") if "step_time_s" in rows.columns else pl.lit(None, pl.Float64)
        out = []
        for column, counter, first, rate in (("tokens", "tokens_total", anchor.tokens_total, "tokens_per_s"),
                                             ("samples", "samples_total", anchor.samples_total, "samples_per_s")):
            parts = [pl.col(column)] if column in rows.columns else []
            if counter in rows.columns:
                grown = pl.col(counter) - _previous(counter, first)
                parts.append(pl.when((steps > 0) & (grown > 0)).then(grown / steps))
            if rate in rows.columns:
                parts.append(pl.col(rate) * time)
            if parts:
                out.append(pl.coalesce(parts).alias(column))
        return rows.with_columns(out) if out else rows

    def _advance(self, rows: pl.DataFrame) -> None:
        last = rows.row(rows.height - 1, named=True)
        highest = self._launch_highest  # the last launch's highest step, when the chunk started a launch
        if highest is None:
            top = int(rows["_s"].max())  # type: ignore[arg-type]
            highest = max(top, self.anchor.highest_step or top)
        kept: dict[str, Any] = {"step": last["_s"], "highest_step": highest,
                                "first_step": self.anchor.first_step if self.anchor.first_step is not None
                                else rows["_s"][0]}
        for name in ("elapsed_s", "wall_time", "tokens_total", "samples_total"):
            if last.get(name) is not None:
                kept[name] = last[name]
        self.anchor = replace(self.anchor, **kept)

    def _remember_micro_batch(self, frame: pl.DataFrame, expr: pl.Expr | None) -> None:
        if self.micro_batch is not None or expr is None:
            return
        values = frame.select(expr).to_series().drop_nulls()
        first = values[0] if len(values) else None
        if first is not None and math.isfinite(first) and 0 < first < 2**62 and first == int(first):
            self.micro_batch = int(first)

    def step_time_note(self) -> str | None:
        """Where the step time came from, when it was not logged per step (for the run's warnings)."""
        used = [s for s in ("interval", "elapsed", "wall") if self.step_time_sources.get(s)]
        if not used:
            return None
        return (f"step time is {' or '.join(STEP_TIME_SOURCES[s] for s in used)} (evaluation and checkpoints in "
                "between count)")

    def set_aside_note(self) -> str | None:
        if not self.set_aside:
            return None
        parts = ", ".join(f"{n:,} {what}" for what, n in sorted(self.set_aside.items(), key=lambda kv: -kv[1]))
        return f"records set aside, not steps: {parts}"

    def meta(self) -> dict[str, object]:
        meta: dict[str, object] = {
            "names_read": sorted(self.names_seen), "records_set_aside": dict(self.set_aside),
            "step_time_source": dict(self.step_time_sources), "frameworks": list(self.mapping().frameworks),
            "columns": {c: [n for n, _ in keys] for c, keys in self.mapping().by_column.items() if c != "-"}}
        if len(self.launch_lines) > 1:
            meta["launch_lines"] = {str(k): v for k, v in sorted(self.launch_lines.items())}
        return meta


def _bar_timed(mapping: KeyMapping, schema: pl.Schema) -> bool:
    """Whether the records' step time is a progress bar's printed rate, beside the bar's clock."""
    timed = [name for name, _ in mapping.keys_of("step_time_s") if name in schema]
    return "progress/elapsed" in schema and bool(timed) and all(n.startswith("progress/") for n in timed)


def _previous(name: str, first: float | None) -> pl.Expr:
    """The value of `name` one row up; the anchor's for the first row."""
    return pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(first, dtype=pl.Float64)).otherwise(
        pl.col(name).shift(1).cast(pl.Float64))

