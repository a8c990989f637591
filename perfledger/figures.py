"""Named figures: `python -m perfledger calc NAME key=value ...` and the pages compute through here.

A figure resolves ids against the store (model shapes, accelerator peaks), calls one perfledger.calc
function, and returns the value with its unit, formula and every input it used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from perfledger import catalog, store
from perfledger.calc import flops as fl
from perfledger.calc import formula_of
from perfledger.calc import metrics as m
from perfledger.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: float
    unit: str
    formula: str
    inputs: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "formula": self.formula,
                "inputs": self.inputs, "notes": list(self.notes)}


class Args:
    """key=value arguments with typed getters whose errors name the key."""

    def __init__(self, name: str, raw: Mapping[str, str]) -> None:
        self.name = name
        self.raw = dict(raw)
        self.used: set[str] = set()

    def text(self, key: str, default: str | None = None) -> str:
        self.used.add(key)
        value = self.raw.get(key, default)
        if value is None or value == "":
            raise InvalidInput(f"{self.name} needs {key}=...")
        return value

    def number(self, key: str, default: float | None = None) -> float:
        self.used.add(key)
        if key not in self.raw:
            if default is None:
                raise InvalidInput(f"{self.name} needs {key}=<number>")
            return default
        try:
            value = float(self.raw[key])
        except ValueError:
            raise InvalidInput(f"{key} should be a number, got {self.raw[key]!r}") from None
        if not value > 0:
            raise InvalidInput(f"{key} must be positive, got {self.raw[key]}")
        return value

    def has(self, key: str) -> bool:
        return key in self.raw

    def check_all_used(self) -> None:
        extra = sorted(set(self.raw) - self.used)
        if extra:
            raise InvalidInput(f"{self.name} does not take {', '.join(extra)}")


def model_row(engine: Engine, name: str) -> dict[str, Any]:
    """The store's model row for a name as printed, resolved with the store's catalog (so a model added with
    `catalog add` is used at once); unknown names raise UnknownId with the nearest ids."""
    return _catalog_row(engine, "model", name)


def accelerator_row(engine: Engine, name: str) -> dict[str, Any]:
    return _catalog_row(engine, "accelerator", name)


def _catalog_row(engine: Engine, kind: str, name: str) -> dict[str, Any]:
    known = store.catalog_record(engine)
    return dict(known.rows(kind)[catalog.resolve_noted(kind, name, known)[0]])


def _flops(engine: Engine, args: Args) -> tuple[float, dict[str, Any]]:
    row = model_row(engine, args.text("model"))
    seq_len = int(args.number("seq_len", float(row["seq_len"]) if row.get("seq_len") else None))
    formula = args.text("formula", fl.DEFAULT_FORMULA)
    value = fl.flops_per_token(fl.ModelShape.from_row(row), seq_len, formula)
    return value, {"model": row["id"], "seq_len": seq_len, "formula": formula, "model_source": row.get("source_id")}


def flops_per_token(engine: Engine, args: Args) -> Figure:
    value, inputs = _flops(engine, args)
    return Figure("flops_per_token", value, "FLOP/token", formula_of(fl.FORMULAS[inputs["formula"]]), inputs)


def model_tflops(engine: Engine, args: Args) -> Figure:
    f, inputs = _flops(engine, args)
    tps = args.number("tokens_per_s_per_device")
    value = m.model_tflops(tps, f)
    return Figure("model_tflops", value, "TFLOP/s/device", formula_of(m.model_tflops),
                  inputs | {"tokens_per_s_per_device": tps, "flops_per_token": f})


def mfu(engine: Engine, args: Args) -> Figure:
    tflops = model_tflops(engine, args)
    acc = accelerator_row(engine, args.text("accelerator"))
    peak = m.peak_tflops(acc, catalog.normalize_precision(args.text("precision")))
    value = m.mfu(tflops.value, peak.tflops)
    inputs = tflops.inputs | {"model_tflops_per_device": tflops.value, "accelerator": acc["id"],
                              "precision": peak.precision, "peak_tflops": peak.tflops, "peak_basis": peak.basis,
                              "accelerator_source": acc.get("source_id")}
    return Figure("mfu", value, "fraction", formula_of(m.mfu), inputs, (f"peak used: {peak.describe()}",))


def speedup(engine: Engine, args: Args) -> Figure:
    c, b = args.number("candidate"), args.number("baseline")
    return Figure("speedup", m.speedup(c, b), "x", formula_of(m.speedup), {"candidate": c, "baseline": b})


def scaling_efficiency(engine: Engine, args: Args) -> Figure:
    keys = ("throughput", "devices", "base_throughput", "base_devices")
    values = {k: args.number(k) for k in keys}
    return Figure("scaling_efficiency", m.scaling_efficiency(**values), "fraction",
                  formula_of(m.scaling_efficiency), values)


def time_to_train(engine: Engine, args: Args) -> Figure:
    tokens, devices = args.number("tokens"), args.number("devices")
    if args.has("tokens_per_s_per_device"):
        tps = args.number("tokens_per_s_per_device")
        args.used.update({"model", "seq_len"})  # accepted for context; throughput already measured
        inputs: dict[str, Any] = {"tokens": tokens, "devices": devices, "tokens_per_s_per_device": tps}
        if args.has("model"):
            inputs["model"] = catalog.resolve_model(args.raw["model"], store.catalog_record(engine))
        seconds = m.time_to_train_s(tokens, devices, tps)
        return Figure("time_to_train", seconds, "s", formula_of(m.time_to_train_s), inputs, _durations(seconds))
    f, inputs = _flops(engine, args)
    acc = accelerator_row(engine, args.text("accelerator"))
    peak = m.peak_tflops(acc, catalog.normalize_precision(args.text("precision")))
    eff = args.number("efficiency")
    seconds = m.time_to_train_from_peak_s(tokens, f, devices, peak.tflops, eff)
    inputs |= {"tokens": tokens, "devices": devices, "flops_per_token": f, "accelerator": acc["id"],
               "precision": peak.precision, "peak_tflops": peak.tflops, "efficiency": eff}
    return Figure("time_to_train", seconds, "s", formula_of(m.time_to_train_from_peak_s), inputs,
                  _durations(seconds) + (f"peak used: {peak.describe()}",))


def cost_to_train(engine: Engine, args: Args) -> Figure:
    price = args.number("usd_per_device_hour")
    if args.has("seconds"):
        seconds, devices = args.number("seconds"), args.number("devices")
        inputs: dict[str, Any] = {"seconds": seconds, "devices": devices}
    else:
        ttt = time_to_train(engine, args)
        seconds, devices, inputs = ttt.value, ttt.inputs["devices"], ttt.inputs | {"seconds": ttt.value}
    value = m.cost_to_train_usd(seconds, devices, price)
    return Figure("cost_to_train", value, "USD", formula_of(m.cost_to_train_usd),
                  inputs | {"usd_per_device_hour": price})


def _durations(seconds: float) -> tuple[str, ...]:
    return (f"= {seconds / m.SECONDS_PER_HOUR:,.2f} h = {seconds / m.SECONDS_PER_DAY:,.2f} days",)


FIGURES: dict[str, Callable[[Engine, Args], Figure]] = {
    "flops_per_token": flops_per_token,
    "model_tflops": model_tflops,
    "mfu": mfu,
    "speedup": speedup,
    "scaling_efficiency": scaling_efficiency,
    "time_to_train": time_to_train,
    "cost_to_train": cost_to_train,
}


def compute(name: str, raw_args: Mapping[str, str], engine: Engine) -> Figure:
    """Compute one named figure from key=value arguments; every error is an InvalidInput or UnknownId."""
    if name not in FIGURES:
        raise InvalidInput(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    args = Args(name, raw_args)
    figure = FIGURES[name](engine, args)
    args.check_all_used()
    return figure
