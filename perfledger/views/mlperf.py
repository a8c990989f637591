"""MLPerf results: every stored MLPerf Training result file as MLPerf shows it (time to train in minutes, with its
round, division, submitter, system, accelerators and framework), and the figures derived from it, labelled so."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import metrics
from perfledger.errors import InvalidInput
from perfledger.records import RunRow
from perfledger.views._shared import TOKEN_METRIC, frame_of
from perfledger.views.columns import reading_order
from perfledger.views.remembered import until_written

MLPERF_FORMAT = "mlperf"
TTT_METRIC = "time_to_train_s"
MINUTES = "time to train (min)"
DERIVED_TFLOPS = "model TFLOP/s/device (derived)"
DERIVED_TOKENS = "tokens/s/device (derived)"
# The round is not printed in a result file; submissions name it in their folder or file name (training_results_v4.0)
_ROUND = re.compile(r"(?<![A-Za-z0-9])v(\d+\.\d+)(?![0-9])")

SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String(), MINUTES: pl.Float64(), "submitter": pl.String(), "system": pl.String(),
    "accelerator × count": pl.String(), "round": pl.String(), "division": pl.String(), "framework": pl.String(),
    "run": pl.Int64(), DERIVED_TFLOPS: pl.Float64(), DERIVED_TOKENS: pl.Float64(), "time to train (s)": pl.Float64(),
    "model": pl.String(), "workload": pl.String(), "seq len": pl.Int64(), "accelerator": pl.String(),
    "devices": pl.Int64(), "status": pl.String(), "file": pl.String(), "result id": pl.Int64(),
}
# What a 1440px screen shows first: the benchmark and the time to train of this result file, who ran it on what, and the
# run it came from.
SHOWN_FIRST = ("benchmark", MINUTES, "submitter", "accelerator × count", "run", "system", "round", "division",
               "framework")


@dataclass(frozen=True)
class MlperfView:
    rounds: tuple[str, ...] = u.key("r", (), label="rounds")
    divisions: tuple[str, ...] = u.key("d", (), label="divisions")
    submitters: tuple[str, ...] = u.key("org", (), label="submitters")
    benchmarks: tuple[str, ...] = u.key("b", (), label="benchmarks")
    accelerators: tuple[str, ...] = u.key("a", (), label="accelerators")
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        chosen = [f"{name} {', '.join(values)}" for name, values in (
            ("round", self.rounds), ("division", self.divisions), ("submitter", self.submitters),
            ("benchmark", self.benchmarks), ("accelerator", self.accelerators)) if values]
        return "MLPerf Training results stored" + (f": {'; '.join(chosen)}" if chosen else ", every submission")


def round_of(file_name: str) -> str | None:
    """The MLPerf round a result file's name states ('..._v4.0_result_0.txt' -> 'v4.0'); None when it names none.

    >>> round_of("nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt"), round_of("result_0.txt")
    ('v4.0', None)
    """
    found = _ROUND.search(file_name)
    return f"v{found.group(1)}" if found else None


def meta(row: RunRow) -> dict[str, Any]:
    """What the result file says of its submission (submission_org, _division, _status, system name)."""
    return dict(row.config.get("format_meta") or {})


def per_device_tokens(config: Mapping[str, Any], figures: Mapping[str, float]) -> float | None:
    """Tokens/s per device of a result: the stored per-device figure, else tokens/s over the stated devices."""
    if figures.get(TOKEN_METRIC):
        return figures[TOKEN_METRIC]
    devices = config.get("n_devices")
    if figures.get("tokens_per_s") and devices:
        return float(figures["tokens_per_s"]) / float(devices)
    return None


def derived_tflops(config: Mapping[str, Any], summary: Mapping[str, Any] | None,
                   figures: Mapping[str, float]) -> float | None:
    """Model TFLOP/s per device of a result (perfledger.calc.metrics.model_tflops) when its model and sequence
    length are known: tokens/s per device x the model's FLOPs per token at that length (the run's summary)."""
    tokens = per_device_tokens(config, figures)
    flops = (summary or {}).get("flops_per_token")
    if tokens is None or not flops or not config.get("seq_len"):
        return None
    try:
        return metrics.model_tflops(tokens, float(flops))
    except InvalidInput:
        return None


def why_no_tflops(config: Mapping[str, Any], figures: Mapping[str, float]) -> str:
    """Why a result gets no model TFLOPS ("" when it gets one)."""
    if not config.get("model"):
        return "the model is not known"
    if not config.get("seq_len"):
        return "the file states no sequence length, so tokens/s (and model FLOPs) cannot be derived"
    if per_device_tokens(config, figures) is None:
        return "the device count is not stated" if figures.get("tokens_per_s") else "the file states no trained tokens"
    return ""


def stored_figures(engine: Engine, run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per run: metric -> value of the results it stored, and the time to train's result id under "result id"."""
    rows = store.results(engine, metric=[TTT_METRIC, "tokens_per_s", TOKEN_METRIC], run_ids=run_ids,
                         columns=("id", "run_id", "metric", "value"))
    out: dict[int, dict[str, Any]] = {}
    for r in rows.sort("id").to_dicts():
        figures = out.setdefault(int(r["run_id"]), {})
        figures.setdefault(r["metric"], r["value"])
        if r["metric"] == TTT_METRIC:
            figures.setdefault("result id", int(r["id"]))
    return out


def result_row(row: RunRow, figures: Mapping[str, Any]) -> dict[str, Any]:
    """One MLPerf result as the table shows it."""
    m, c = meta(row), row.config
    seconds = figures.get(TTT_METRIC)
    devices = c.get("n_devices")
    return {
        "benchmark": c.get("model_as_printed"), MINUTES: metrics.minutes(seconds) if seconds else None,
        "submitter": m.get("submission_org"), "system": m.get("system_name") or m.get("submission_platform"),
        "accelerator × count": _accelerators(c.get("accelerator"), c.get("accelerator_as_printed"), devices),
        "round": round_of(row.file_name), "division": m.get("submission_division"), "framework": c.get("framework"),
        "run": row.id, DERIVED_TFLOPS: derived_tflops(c, row.summary, figures),
        DERIVED_TOKENS: per_device_tokens(c, figures),
        "time to train (s)": seconds, "model": c.get("model"), "workload": c.get("workload"), "seq len": c.get("seq_len"),
        "accelerator": c.get("accelerator"), "devices": devices, "status": m.get("submission_status"),
        "file": row.file_name, "result id": figures.get("result id"),
    }


def _accelerators(accelerator: str | None, printed: str | None, devices: int | None) -> str | None:
    """Who ran on what, as the table says it: "h100-sxm × 512"; a name the catalog does not hold (a system's,
    such as "gaudi-8") is quoted as printed beside the count, never read as the accelerator's name.

    >>> _accelerators("h200", "NVIDIA H200", 8), _accelerators(None, "gaudi-8", 8)
    ('h200 × 8', '8 devices · printed “gaudi-8”')
    """
    count = f"{devices:,} devices" if devices else "count not stated"
    if accelerator:
        return f"{accelerator} × {devices:,}" if devices else f"{accelerator} ({count})"
    return f"{count} · printed “{printed}”" if printed else None


def headline(engine: Engine, row: RunRow) -> dict[str, Any] | None:
    """An MLPerf result's row of the table (time to train in minutes first, derived figures labelled) and why it
    has no model TFLOPS (`why no TFLOPS`, "" when it has them); None for a run of any other format."""
    if row.format != MLPERF_FORMAT:
        return None
    figures = stored_figures(engine, [row.id]).get(row.id, {})
    return result_row(row, figures) | {"why no TFLOPS": why_no_tflops(row.config, figures)}


_FILTERS = (("rounds", "round"), ("divisions", "division"), ("submitters", "submitter"), ("benchmarks", "benchmark"),
            ("accelerators", "accelerator"))


@until_written(keep=4)
def every_result(engine: Engine) -> pl.DataFrame:
    """Every stored MLPerf result, one row per result file, unfiltered and unsorted."""
    runs = store.runs_of_format(engine, MLPERF_FORMAT)
    figures = stored_figures(engine, [r.id for r in runs])
    return frame_of([result_row(r, figures.get(r.id, {})) for r in runs], SCHEMA)


def table(state: MlperfView, engine: Engine) -> pl.DataFrame:
    """Every stored MLPerf result (one row per result file), filtered as the state says, by benchmark then time to train."""
    frame = every_result(engine)
    for field, column in _FILTERS:
        chosen = getattr(state, field)
        if chosen:
            frame = frame.filter(pl.col(column).is_in(list(chosen)))
    return reading_order(frame.sort(["benchmark", MINUTES, "run"], nulls_last=True), SHOWN_FIRST)


def choices(engine: Engine) -> dict[str, list[str]]:
    """The values each filter can take in the stored results (state field -> sorted values)."""
    frame = every_result(engine)
    return {field: sorted(str(v) for v in frame[column].drop_nulls().unique().to_list()) for field, column in _FILTERS}


FORMULAS: tuple[Callable[..., Any], ...] = (metrics.minutes, metrics.model_tflops)
