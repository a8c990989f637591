"""The log's own figures printed once for the run, not every step, set beside the recomputed ones.

NeMo 2's FLOPs callback prints 'TFLOPs per sec per GPU=...' once at the end of training (over its whole run),
DeepSpeed's flops profiler prints the FLOPS per GPU of the one step it profiled, and the HF Trainer prints
train_samples_per_second over the whole run. Parsers keep each as a result row; where the log prints no per-step
figure (columns reported_*), the summary compares ours with this one instead, and says over what it was printed.

HF samples/s becomes tokens/s per device only when the sequence length and the device count are known:
    tokens/s per device = train_samples_per_second x seq_len / devices   (derived, never measured)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc import orderstats
from perfledger.calc.conventions import conventions
from perfledger.errors import InvalidInput
from perfledger.records import ResultRecord, RunConfig
from perfledger.vocabulary import LogFormat, Metric

# result metric -> the reported_* column it stands in for
_COLUMNS = {Metric.MODEL_TFLOPS_PER_DEVICE.value: "reported_tflops_per_device",
            Metric.TOKENS_PER_S_PER_DEVICE.value: "reported_tokens_per_s_per_device",
            Metric.MFU.value: "reported_mfu"}


# Formats whose result rows are the run's own figures (a claims file or a baselines file holds other runs' figures).
RUN_LOGS = frozenset({LogFormat.NEMO, LogFormat.DEEPSPEED, LogFormat.KEY_VALUE, LogFormat.HF_TRAINER_STATE,
                      LogFormat.METRICS})


@dataclass(frozen=True, slots=True)
class RunFigure:
    column: str  # the reported_* column it stands in for
    value: float
    over: str  # what the log printed it over, in words


def run_figures(log_format: LogFormat, results: Iterable[ResultRecord], config: RunConfig) -> dict[str, RunFigure]:
    """The first run-level figure the parser read for each reported_* column (a positive finite value)."""
    out: dict[str, RunFigure] = {}
    if log_format not in RUN_LOGS:
        return out
    for r in results:
        if r.value is None or not (math.isfinite(r.value) and r.value > 0):
            continue
        figure = _figure(r, config)
        if figure is not None:
            out.setdefault(figure.column, figure)
    return out


def _figure(r: ResultRecord, config: RunConfig) -> RunFigure | None:
    over = r.note or r.locator or "the run"
    if r.value is None:  # a claims cell kept as printed: never a run's figure
        return None
    if r.evidence == "reported" and r.metric in _COLUMNS:
        return RunFigure(_COLUMNS[r.metric], r.value, over)
    if r.metric == Metric.SAMPLES_PER_S.value and r.evidence in ("reported", "measured") and config.seq_len \
            and config.n_devices:
        return RunFigure("reported_tokens_per_s_per_device", r.value * config.seq_len / config.n_devices,
                         f"derived: the log's samples/s {r.value:g} x seq_len {config.seq_len} / "
                         f"{config.n_devices} devices; {over}")
    return None


def derived_results(figures: dict[str, RunFigure], config: RunConfig) -> tuple[ResultRecord, ...]:
    """The derived tokens/s per device as a result row (labelled derived), when one was derived."""
    figure = figures.get("reported_tokens_per_s_per_device")
    if figure is None or not figure.over.startswith("derived"):
        return ()
    return (ResultRecord(metric=Metric.TOKENS_PER_S_PER_DEVICE.value, value=figure.value,
                         unit=Metric.TOKENS_PER_S_PER_DEVICE.unit, n_devices=config.n_devices,
                         framework=config.framework, seq_len=config.seq_len, evidence="derived",
                         locator="train summary", note=figure.over),)


def window_medians(steps: pl.LazyFrame, first: int | None, last: int | None,
                   printed_window: int | None) -> tuple[dict[str, float | None], str | None]:
    """The median of each of the log's own per-step figures (columns reported_*) over the steady window, nulls and
    NaNs left out (None where the column is absent or holds none there), and over what, when not each step's own.

    A figure the log prints as a mean over its last `printed_window` steps (Composer's speed monitor) counts only
    where that window lies wholly inside the steady window: the windows printed just after warm-up still average
    warm-up steps, and stalls sit inside the later ones, so the log's own figure is its windows', not ours."""
    columns = [c for c in steps.collect_schema().names() if c.startswith("reported_")]
    if first is None or last is None:
        return dict.fromkeys(columns), None
    start, over = first, None
    if printed_window and printed_window > 1 and first + printed_window - 1 <= last:
        start = first + printed_window - 1
        over = (f"median of the log's own {printed_window}-step means whose steps all lie in the steady window "
                f"(printed at steps {start}-{last})")
    window = pl.col("step").is_between(start, last)
    return {c: orderstats.quantile(steps, pl.col(c), 0.5, window) for c in columns}, over


def reported_beside_ours(window: dict[str, float | None], tps: float | None, tflops: float | None,
                         mfu: float | None, printed: Mapping[str, RunFigure], over: str | None = None) -> \
        dict[str, Any]:
    """The log's own figures (median over the window, else printed once for the run: `printed_over` says over
    what) beside ours, with the relative difference."""
    out: dict[str, Any] = {}
    for column, ours in (("reported_tokens_per_s_per_device", tps), ("reported_tflops_per_device", tflops),
                         ("reported_mfu", mfu)):
        theirs = window.get(column)
        if theirs is not None and over is not None:
            out.setdefault("printed_over", {})[column.removeprefix("reported_")] = over
        if theirs is None and column in printed:
            theirs = printed[column].value
            out.setdefault("printed_over", {})[column.removeprefix("reported_")] = printed[column].over
        if theirs is None:
            continue
        out[column] = theirs
        if ours:
            out[column.replace("reported_", "diff_")] = (ours - theirs) / theirs if theirs else None
    return out


def explain_tflops_difference(reported: dict[str, Any], shape: fl.ModelShape, seq_len: int, tps: float,
                               precision: str | None) -> None:
    """When the log's own TFLOP/s differs from ours by more than 2 %, name the FLOPs convention that reproduces
    it (perfledger.calc.conventions: the default, causal-halved attention, 6N, 6N + 12·L·s·h, the embedding
    counted); `reported["conventions"]` lists what each gives.

    Frameworks changed their counting (Megatron-LM halved attention for the causal mask in 2025-03, NeMo in
    2025-08), so a difference is usually a convention, not a measurement error.
    """
    diff = reported.get("diff_tflops_per_device")
    theirs = reported.get("reported_tflops_per_device")
    if diff is None or theirs is None or abs(diff) <= 0.02:
        return
    candidates = []
    for c in conventions(precision):
        if c.peak_precision is not None or c.name == "lora":  # a peak convention, or one for LoRA runs only
            continue
        try:
            ours = m.model_tflops(tps, c.flops(shape, seq_len))
        except InvalidInput:
            continue
        candidates.append((abs(ours - theirs) / theirs, c.name, c.title, ours))
    if not candidates:
        return
    reported["conventions"] = {name: ours for _, name, _, ours in candidates}
    gap, name, title, ours = min(candidates)
    if gap <= 0.02:
        reported["explained_by_formula"] = name
        reported["explanation"] = (f"the log counts FLOPs as '{title}': {ours:.1f} TFLOP/s under "
                                   f"that convention, {gap:.1%} from the log's {theirs:g}")
    else:
        reported["explanation"] = (f"no FLOPs convention reproduces the log's {theirs:g} TFLOP/s within 2% "
                                   f"(closest: {name}, {ours:.1f}); check the architecture the log states")
