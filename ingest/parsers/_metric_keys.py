"""The metric names training frameworks log (to W&B, and Composer to its console too), mapped onto STEP_SCHEMA.

One table for both readers of such names: the W&B history parser (CSV and JSONL exports) and the Composer
console parser. A step column takes the first of its names present in a row; a figure is kept as logged, only its
unit changes (percent to a fraction, FLOP/s to TFLOP/s, bytes to GB, batches/s to seconds per batch).

Where no name gives a step time, it is wall clock: the run time (W&B `_runtime`, Composer `time/train` in hours)
between two logged training rows over the steps between them. Tokens and samples per step come from cumulative
counters (Composer `time/token`, HF `train/num_input_tokens_seen`) the same way, or from a total rate x step time.
A row is a training row when it carries a loss, a learning rate, a gradient norm or a speed figure; evaluation and
media rows are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import polars as pl

from ingest.parsers._common import step_frame_from_columns

Conv = Callable[[pl.Expr], pl.Expr]


def _same(e: pl.Expr) -> pl.Expr:
    return e


def _percent(e: pl.Expr) -> pl.Expr:
    return pl.when(e > 0).then(e / 100.0)


def _fraction(e: pl.Expr) -> pl.Expr:
    return pl.when(e > 0).then(e)


def _tera(e: pl.Expr) -> pl.Expr:
    return e / 1e12


def _per_second_to_seconds(e: pl.Expr) -> pl.Expr:
    return pl.when(e > 0).then(1.0 / e)


def _bytes_to_gb(e: pl.Expr) -> pl.Expr:
    return e / 1e9


def _ms_to_s(e: pl.Expr) -> pl.Expr:
    return e / 1000.0


# STEP_SCHEMA column -> (logged name, conversion), in order of preference. Names are as logged (Composer's
# console prints them after "Train "). Frameworks: Composer / llm-foundry, HF Trainer, Megatron, torchtitan, nanoGPT.
COLUMNS: dict[str, tuple[tuple[str, Conv], ...]] = {
    "loss": (("loss/train/total", _same), ("train/loss", _same), ("lm loss", _same),
             ("loss_metrics/global_avg_loss", _same), ("train_loss", _same), ("loss", _same)),
    "lr": (("train/learning_rate", _same), ("learning-rate", _same), ("train/lr", _same), ("lr", _same),
           ("learning_rate", _same)),
    "grad_norm": (("train/grad_norm", _same), ("grad-norm", _same), ("grad_norm", _same),
                  ("l2_norm/grad/global", _same)),
    "step_time_s": (("iteration-time", _same), ("time_metrics/end_to_end(s)", _same), ("train/step_time", _same),
                    ("step_time", _same), ("train/step_time_ms", _ms_to_s), ("throughput/batches_per_sec",
                                                                             _per_second_to_seconds)),
    "reported_tflops_per_device": (("throughput/device/flops_per_sec", _tera), ("tflops", _same)),
    "reported_mfu": (("throughput/device/mfu", _fraction), ("mfu(%)", _percent)),
    "reported_tokens_per_s_per_device": (("throughput/device/tokens_per_sec", _same), ("throughput(tps)", _same)),
    "memory_gb": (("memory/peak_reserved_mem", _same), ("memory/max_reserved(GiB)", _same),
                  ("mem-max-allocated-bytes", _bytes_to_gb)),
}
STEP_NAMES = ("train/global_step", "trainer/global_step", "global_step", "iteration", "iter", "train/step", "step",
              "_step")
RUNTIME_NAMES: tuple[tuple[str, Conv], ...] = (("_runtime", _same), ("time/train", lambda e: e * 3600.0))
TOKEN_COUNTERS = ("time/token", "train/num_input_tokens_seen", "num_input_tokens_seen")
SAMPLE_COUNTERS = ("time/sample",)
TOKEN_RATES = ("throughput/tokens_per_sec",)
SAMPLE_RATES = ("throughput/samples_per_sec", "train/train_samples_per_second")
MICRO_BATCH = "trainer/device_train_microbatch_size"
_LR_PREFIX = "lr-"  # Composer's LRMonitor: lr-<Optimizer>/group0
TRAINING_COLUMNS = ("loss", "lr", "grad_norm", "step_time_s", "reported_tflops_per_device", "reported_mfu",
                    "reported_tokens_per_s_per_device")

KNOWN_NAMES: frozenset[str] = frozenset(
    [name for pairs in COLUMNS.values() for name, _ in pairs] + list(STEP_NAMES)
    + [name for name, _ in RUNTIME_NAMES] + list(TOKEN_COUNTERS) + list(SAMPLE_COUNTERS) + list(TOKEN_RATES)
    + list(SAMPLE_RATES) + [MICRO_BATCH, "throughput", "mfu"])


def is_known(name: str) -> bool:
    """Whether a logged name is one the table reads (the readers drop every other name before building frames)."""
    return name in KNOWN_NAMES or (name.startswith(_LR_PREFIX) and name.endswith("/group0"))


def framework_of(names: Iterable[str]) -> str | None:
    """The framework whose names these are, by a name only it logs; None when none says."""
    present = set(names)
    for marker, framework in (("loss/train/total", "composer"), ("time/batch", "composer"), ("lm loss", "megatron"),
                              ("iteration-time", "megatron"), ("loss_metrics/global_avg_loss", "torchtitan"),
                              ("throughput(tps)", "torchtitan"), ("train/global_step", "hf-trainer")):
        if marker in present:
            return framework
    return "nanogpt" if {"iter", "mfu"} <= present else None


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last training row of the previous chunk: what the first row of the next one is measured from."""

    step: int | None = None
    runtime_s: float | None = None
    tokens: float | None = None
    samples: float | None = None


def _num(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Float64, strict=False)


def _first(names: Iterable[tuple[str, Conv]], present: set[str]) -> pl.Expr | None:
    exprs = [conv(_num(name)) for name, conv in names if name in present]
    return pl.coalesce(exprs) if len(exprs) > 1 else (exprs[0] if exprs else None)


def _column_exprs(present: set[str]) -> dict[str, pl.Expr]:
    out = {col: e for col, pairs in COLUMNS.items() if (e := _first(pairs, present)) is not None}
    lr_names = sorted(n for n in present if n.startswith(_LR_PREFIX) and n.endswith("/group0"))
    if "lr" not in out and lr_names:
        out["lr"] = _num(lr_names[0])
    if "throughput" in present and "iteration-time" in present:  # Megatron's wandb "throughput" is TFLOP/s/GPU
        out["reported_tflops_per_device"] = _num("throughput")
    if "mfu" in present and "iter" in present:  # nanoGPT logs mfu in percent (-100 before it has an estimate)
        out["reported_mfu"] = _percent(_num("mfu"))
    return out


def _step_expr(present: set[str]) -> pl.Expr | None:
    names = [n for n in STEP_NAMES if n in present]
    if not names:
        return None
    exprs = [_num(n) for n in names]
    value = pl.coalesce(exprs) if len(exprs) > 1 else exprs[0]
    return pl.when((value == value.round(0)) & (value.abs() < 2.0**62)).then(value).cast(pl.Int64)


def _previous(name: str, first: float | None) -> pl.Expr:
    """The value of `name` one row up; the anchor's for the first row."""
    return pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(first, dtype=pl.Float64)).otherwise(
        pl.col(name).shift(1).cast(pl.Float64))


def steps_from_metrics(frame: pl.DataFrame, anchor: Anchor) -> tuple[pl.DataFrame, Anchor]:
    """Rows of logged metrics (one column per name, values numbers or text) -> (the training rows as a
    STEP_SCHEMA frame, the anchor for the next chunk)."""
    present = set(frame.columns)
    step = _step_expr(present)
    if step is None or frame.height == 0:
        return step_frame_from_columns({}, 0), anchor
    exprs = _column_exprs(present)
    training = [exprs[c].is_not_null() for c in TRAINING_COLUMNS if c in exprs]
    if not training:
        return step_frame_from_columns({}, 0), anchor
    rates = {"_tokens_rate": TOKEN_RATES, "_samples_rate": SAMPLE_RATES, "_tokens_seen": TOKEN_COUNTERS,
             "_samples_seen": SAMPLE_COUNTERS}
    derived = {"_runtime_s": _first(RUNTIME_NAMES, present)} | {
        alias: _first(((n, _same) for n in names), present) for alias, names in rates.items()}
    rows = frame.select(
        step.alias("_s"), *(e.alias(c) for c, e in exprs.items()),
        *((pl.lit(None, pl.Float64) if e is None else e).alias(alias) for alias, e in derived.items()),
        pl.any_horizontal(training).alias("_training"),
    ).filter(pl.col("_training") & pl.col("_s").is_not_null())
    if rows.height == 0:
        return step_frame_from_columns({}, 0), anchor
    first_step = anchor.step
    wall = _wall_clock(first_step, anchor.runtime_s)
    explicit = pl.col("step_time_s") if "step_time_s" in exprs else pl.lit(None, pl.Float64)
    rows = rows.with_columns(pl.coalesce(explicit, wall).alias("step_time_s"))
    rows = rows.with_columns(
        pl.coalesce(_counter_per_step("_tokens_seen", first_step, anchor.tokens),
                    pl.col("_tokens_rate") * pl.col("step_time_s")).alias("tokens"),
        pl.coalesce(_counter_per_step("_samples_seen", first_step, anchor.samples),
                    pl.col("_samples_rate") * pl.col("step_time_s")).alias("samples"),
    )
    last = rows.row(rows.height - 1, named=True)
    next_anchor = Anchor(step=last["_s"], runtime_s=last["_runtime_s"] if last["_runtime_s"] is not None
                         else anchor.runtime_s, tokens=last["_tokens_seen"], samples=last["_samples_seen"])
    columns = {c: rows[c] for c in rows.columns if not c.startswith("_")}
    columns["step"] = rows["_s"]
    return step_frame_from_columns(columns, rows.height), next_anchor


def _wall_clock(first_step: int | None, first_runtime: float | None) -> pl.Expr:
    prev_step = _previous("_s", first_step)
    prev_time = _previous("_runtime_s", first_runtime)
    steps = pl.col("_s") - prev_step
    elapsed = pl.col("_runtime_s") - prev_time
    return pl.when((steps > 0) & (elapsed > 0)).then(elapsed / steps)


def _counter_per_step(name: str, first_step: int | None, first_value: float | None) -> pl.Expr:
    steps = pl.col("_s") - _previous("_s", first_step)
    grown = pl.col(name) - _previous(name, first_value)
    return pl.when((steps > 0) & (grown > 0)).then(grown / steps)
