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
from collections.abc import Iterable
from dataclasses import dataclass

from perfledger.records import ResultRecord, RunConfig
from perfledger.vocabulary import LogFormat, Metric

# result metric -> the reported_* column it stands in for
_COLUMNS = {Metric.MODEL_TFLOPS_PER_DEVICE.value: "reported_tflops_per_device",
            Metric.TOKENS_PER_S_PER_DEVICE.value: "reported_tokens_per_s_per_device",
            Metric.MFU.value: "reported_mfu"}


# Formats whose result rows are the run's own figures (a claims file or a baselines file holds other runs' figures).
RUN_LOGS = frozenset({LogFormat.NEMO, LogFormat.DEEPSPEED, LogFormat.HF_TRAINER_LOG, LogFormat.HF_TRAINER_STATE,
                      LogFormat.HF_RESULTS_JSON})


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
    if r.metric == Metric.SAMPLES_PER_S.value and r.framework == "transformers" and config.seq_len \
            and config.n_devices:
        return RunFigure("reported_tokens_per_s_per_device", r.value * config.seq_len / config.n_devices,
                         f"derived: train_samples_per_second {r.value:g} x seq_len {config.seq_len} / "
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
