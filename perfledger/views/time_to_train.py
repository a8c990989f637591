"""Time to train: N tokens on D devices, from a chosen measured row or from a fraction of the dense peak."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger import urlstate as u
from perfledger.calc import flops, metrics
from perfledger.errors import InvalidQuery
from perfledger.views._shared import (
    FORMULA_NAMES,
    TOKEN_METRIC,
    WORKLOAD_LABELS,
    WORKLOADS,
    CatalogRef,
    rows_by_id,
    si,
    store_workload,
)

MODES = ("peak", "measured")
MODE_LABELS = {"peak": "efficiency × peak", "measured": "a measured row"}  # the page's "Throughput from" choices
MODE_CHOICE = "Throughput from"
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(frozen=True)
class TimeToTrainView:
    model: str = u.key("m", "gpt3-175b")
    tokens: float = u.key("tok", 300e9, low=1.0, high=1e15)  # the Tokens widget's range
    accelerator: str = u.key("a", "a800-80gb")
    devices: int = u.key("n", 1024, low=1, high=1_000_000)
    mode: str = u.key("mode", "peak", choices=MODES)
    efficiency: float = u.key("e", 0.5, low=0.001, high=1.0)
    precision: str = u.key("p", "fp16", choices=PRECISIONS)
    row: int = u.key("r", 0, low=0, high=u.MAX_ID)
    workload: str = u.key("w", "pretrain", choices=WORKLOADS)  # of the measured rows offered
    usd_per_hour: float = u.key("usd", 0.0, low=0.0, high=1000.0)
    formula: str = u.key("f", flops.DEFAULT_FORMULA, choices=FORMULA_NAMES)
    sort: str = u.sort_field()
    desc: bool = u.descending_field()
    problems: tuple[str, ...] = u.problems_field()

    def describe(self) -> str:
        how = (f"{self.efficiency:.0%} of dense {self.precision} peak" if self.mode == "peak"
               else f"a measured tokens/s/device ({WORKLOAD_LABELS[self.workload]})")
        return f"{self.model}: {si(self.tokens)} tokens on {self.devices} × {self.accelerator} at {how}"


    def catalog_ids(self) -> tuple[CatalogRef, ...]:
        return (("m", "model", (self.model,)), ("a", "accelerator", (self.accelerator,)))


TTT_SCHEMA: dict[str, pl.DataType] = {
    "devices": pl.Int64(), "time (s)": pl.Float64(), "time (h)": pl.Float64(), "time (days)": pl.Float64(),
    "cost (USD)": pl.Float64(), "tokens/s/device": pl.Float64(), "basis": pl.String(), "scaling": pl.String(),
    "chosen": pl.Boolean(), "measured result id": pl.Int64(),
}


MEASURED_COLUMNS = ("id", "value", "n_devices", "precision", "framework", "workload", "source_id", "run_id")
UNSTATED = "unstated"


def measured_rows(state: TimeToTrainView, engine: Engine) -> pl.DataFrame:
    """The stored tokens/s/device rows of the view's model, accelerator and workload, by id: the rows measured mode
    may use."""
    rows = store.results(engine, metric=TOKEN_METRIC, model_ids=[state.model], accelerator_ids=[state.accelerator],
                         workload=store_workload(state.workload))
    return rows.select(MEASURED_COLUMNS).sort("id")


def measured_label(row: dict[str, Any]) -> str:
    """A measured row as the page offers it: value, devices, precision and source."""
    devices = f"{row['n_devices']:,} devices" if row.get("n_devices") else "devices unstated"
    precision = row.get("precision") or UNSTATED
    return (f"result {row['id']}: {row['value']:,g} tokens/s/device · {devices} · "
            f"{'precision unstated' if precision == UNSTATED else precision} · {row.get('workload') or 'workload unstated'}"
            f" · {_origin(row)}")


def _origin(row: dict[str, Any]) -> str:
    """Where a measured row comes from: its source, or the ingested run that measured it."""
    if row.get("source_id"):
        return str(row["source_id"])
    return f"measured by run {row['run_id']}" if row.get("run_id") else "no source"


def foreign_row(state: TimeToTrainView, engine: Engine) -> str | None:
    """Why the view's measured row `r` cannot be used (no such result, or one of another model, accelerator,
    metric or workload); None when it can, or when none is given."""
    if state.mode != "measured" or not state.row or state.row in measured_rows(state, engine)["id"].to_list():
        return None
    found = store.results(engine, ids=[state.row], columns=("id", "model_id", "accelerator_id", "metric", "workload"))
    if not found.height:
        return f"there is no result {state.row}, so it is not used"
    r = found.row(0, named=True)
    return (f"result {state.row} is {r['metric']} of {r['model_id'] or 'an unnamed model'} on "
            f"{r['accelerator_id'] or 'an unnamed accelerator'} ({r['workload'] or 'workload unstated'}), not a "
            f"tokens/s/device row of {state.model} on {state.accelerator} ({state.workload}), so it is not used")


def measured_row(state: TimeToTrainView, engine: Engine) -> dict[str, Any] | None:
    """The measured tokens/s/device row the projection uses: `r` when it is one of the model and accelerator's
    stored rows, else their first (InvalidQuery for an `r` of another model or accelerator: never a foreign row)."""
    if (problem := foreign_row(state, engine)) is not None:
        raise InvalidQuery(f"{problem}; choose one of the stored rows of {state.model} on {state.accelerator}")
    rows = measured_rows(state, engine)
    chosen = rows.filter(pl.col("id") == state.row) if state.row else rows
    return chosen.row(0, named=True) if chosen.height else None


def _throughput_per_device(state: TimeToTrainView, engine: Engine) -> tuple[float, str]:
    """(tokens/s/device, basis sentence) for the view's mode."""
    if state.mode == "measured":
        row = measured_row(state, engine)
        if row is None:
            raise InvalidQuery(f"no {WORKLOAD_LABELS[state.workload]} tokens/s/device row is stored for {state.model} "
                               f"on {state.accelerator}; choose another model, accelerator or workload, or "
                               f"“{MODE_LABELS['peak']}” under {MODE_CHOICE} (mode=peak)")
        return float(row["value"]), f"measured: {measured_label(row)}"
    model_rows, acc_rows = store.catalog(engine)
    model, acc = rows_by_id(model_rows).get(state.model), rows_by_id(acc_rows).get(state.accelerator)
    if model is None or acc is None:
        missing = state.model if model is None else state.accelerator
        raise InvalidQuery(f"{missing!r} is not in the catalog; pick a model and accelerator from the lists")
    fpt = flops.flops_per_token(flops.ModelShape.from_row(model), int(model.get("seq_len") or 2048), state.formula)
    peak = metrics.peak_tflops(acc, state.precision)
    seconds = metrics.time_to_train_from_peak_s(1.0, fpt, 1, peak.tflops, state.efficiency)
    return 1.0 / seconds, f"{state.efficiency:.0%} of {peak.describe()}; {fpt / 1e9:.1f} GFLOP/token ({state.formula})"


def device_counts(devices: int) -> list[int]:
    """The chosen device count and a sweep around it (/4, /2, x2, x4)."""
    return sorted({max(1, devices // 4), max(1, devices // 2), devices, devices * 2, devices * 4})


def table(state: TimeToTrainView, engine: Engine) -> pl.DataFrame:
    """Time (and cost) to train `tokens` at the chosen device count and a sweep around it."""
    tps, basis = _throughput_per_device(state, engine)
    used = measured_row(state, engine) if state.mode == "measured" else None
    measured_on = (used or {}).get("n_devices")
    out = []
    for n in device_counts(state.devices):
        seconds = metrics.time_to_train_s(state.tokens, n, tps)
        cost = metrics.cost_to_train_usd(seconds, n, state.usd_per_hour) if state.usd_per_hour > 0 else None
        out.append({"devices": n, "time (s)": seconds, "time (h)": seconds / metrics.SECONDS_PER_HOUR,
                    "time (days)": seconds / metrics.SECONDS_PER_DAY, "cost (USD)": cost, "tokens/s/device": tps,
                    "basis": basis, "scaling": scaling_assumed(state.mode, n, measured_on), "chosen": n == state.devices,
                    "measured result id": used and used["id"]})
    return pl.DataFrame(out, schema=TTT_SCHEMA, strict=False)


def scaling_assumed(mode: str, devices: int, measured_on: int | None) -> str:
    """What a row assumes of scaling: a per-device throughput held at every device count is linear scaling.

    >>> scaling_assumed("measured", 32, 8), scaling_assumed("measured", 8, 8)
    ('linear scaling from the 8 devices measured', 'as measured (8 devices)')
    """
    if mode == "peak":
        return "linear scaling: the same share of the peak on every device"
    if not measured_on:
        return "linear scaling: the measured row states no device count"
    if devices == measured_on:
        return f"as measured ({measured_on:,} devices)"
    return f"linear scaling from the {measured_on:,} devices measured"


def scaling_sentence(ttt_frame: pl.DataFrame) -> str:
    """The page's sentence on what its device counts assume ("" when every row is as measured): "At 2, 4, 16 and
    32 devices the time assumes linear scaling from the 8 devices measured."."""
    assumed = ttt_frame.filter(pl.col("scaling").str.starts_with("linear"))
    if assumed.height == 0:
        return ""
    counts = [f"{n:,}" for n in assumed["devices"].to_list()]
    listed = ", ".join(counts[:-1]) + f" and {counts[-1]}" if len(counts) > 1 else counts[0]
    return f"At {listed} devices the time assumes {assumed['scaling'][0]}."


def chosen_row(ttt_frame: pl.DataFrame) -> dict[str, Any]:
    """The time-to-train row for the device count the view chose."""
    return ttt_frame.filter(pl.col("chosen")).row(0, named=True)


FORMULAS: tuple[Callable[..., Any], ...] = (
    metrics.time_to_train_from_peak_s, metrics.time_to_train_s, metrics.cost_to_train_usd)
