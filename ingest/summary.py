"""A parsed run's steady-state summary: throughput, model TFLOPS, MFU and jitter, each through perfledger.calc.

What cannot be computed stays empty with the reason (in `why_missing`), never a guess: MFU needs the
accelerator and the precision, TFLOPS needs the model's shape and the sequence length, per-device figures
need the device count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from ingest import derived
from ingest.parsers._records import step_time_source_text
from ingest.printed import (
    derived_results,
    explain_tflops_difference,
    reported_beside_ours,
    run_figures,
    window_medians,
)
from perfledger import catalog
from perfledger.calc import flops as fl
from perfledger.calc import metrics as m
from perfledger.calc import orderstats
from perfledger.calc.clock import timed_by_clock
from perfledger.calc.launches import SEVERAL_RUNS, LaunchSpan, chosen_launch, launch_table, launches_note
from perfledger.calc.phases import phase_figures
from perfledger.calc.steady import (
    SteadyRule,
    SteadyState,
    not_steady,
    steady_columns,
    steady_state,
    steady_state_of_ordered,
)
from perfledger.errors import InvalidInput
from perfledger.records import ParseSummary, ResultRecord, RunConfig
from perfledger.vocabulary import LogFormat

# The warnings summarize() adds (the others are the parser's): a run summarised again drops these first.
SUMMARY_WARNINGS = ("not a steady state:", "mfu not computed:", "model_tflops_per_device not computed:",
                    "tokens_per_s_per_device not computed:", "tokens/s per device is the median of the log's own",
                    "the store holds no catalog", SEVERAL_RUNS)


def parser_warnings(warnings: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A stored run's warnings less those its summary added."""
    return tuple(w for w in warnings if not w.startswith(SUMMARY_WARNINGS))


STEADY_KEYS = ("first_step", "last_step", "step_time_s_median", "tokens_per_s_per_device",
               "model_tflops_per_device", "mfu", "jitter_cv")


@dataclass(frozen=True, slots=True)
class RunSummary:
    config: dict[str, Any]
    steady: SteadyState | None
    tokens_per_s_per_device: float | None
    model_tflops_per_device: float | None
    mfu: float | None
    flops_per_token: float | None
    flops_formula: str | None
    peak: str | None
    warnings: tuple[str, ...]
    why_missing: dict[str, str]
    reported: dict[str, Any]
    results: tuple[ResultRecord, ...] = ()
    sources: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    launches: tuple[LaunchSpan, ...] = ()  # every launch of the file, when it holds more than one
    launch: int | None = None  # the launch summarised (the longest)
    phases: dict[str, float] = field(default_factory=dict)  # an RLHF step's parts (perfledger.calc.phases)
    identity: dict[str, Any] = field(default_factory=dict)  # field -> {"from", "where"}: see ingest.identity
    step_time_source: str | None = None  # where the step times came from, in words, when the reader says

    def launches_json(self) -> list[dict[str, Any]]:
        return [span.as_dict() | {"summarised": span.launch == self.launch} for span in self.launches]

    def steady_state_json(self) -> dict[str, Any]:
        s = self.steady
        out: dict[str, Any] = {
            "first_step": s.first_step if s else None,
            "last_step": s.last_step if s else None,
            "step_time_s_median": s.step_time_s_median if s else None,
            "tokens_per_s_per_device": self.tokens_per_s_per_device,
            "model_tflops_per_device": self.model_tflops_per_device,
            "mfu": self.mfu,
            "jitter_cv": s.jitter_cv if s else None,
            "jitter_p99_p50": s.jitter_p99_p50 if s else None,
            "warmup_steps": s.warmup_steps if s else None,
            "stalls": s.stalls if s else None,
            "steps_in_window": s.steps_in_window if s else 0,
            "timed_steps": s.timed_steps if s else 0,
            "not_steady": not_steady(s) if s else [],
            "tokens_per_s": s.tokens_per_s if s else None,
            "flops_per_token": self.flops_per_token,
            "flops_formula": self.flops_formula,
            "peak": self.peak,
            "rule": s.rule.as_dict() if s else SteadyRule().as_dict(),
            "rule_text": (s.rule if s else SteadyRule()).describe(),
            "step_time_source": self.step_time_source,
        } | self.phases
        return {k: _finite(v) for k, v in out.items()}

    def results_json(self) -> list[dict[str, Any]]:
        return [{"metric": r.metric, "value": _finite(r.value), "unit": r.unit, "evidence": r.evidence,
                 "note": r.note} for r in self.results]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def resolve_config(config: RunConfig) -> RunConfig:
    """Names as printed -> canonical ids where the catalog knows them; the printed text is kept beside."""
    return replace(
        config,
        model=catalog.resolve_or_none("model", config.model or _one_name(config.model_as_printed)) or config.model,
        model_as_printed=config.model_as_printed or config.model,
        accelerator=catalog.resolve_or_none("accelerator", config.accelerator or config.accelerator_as_printed)
        or config.accelerator,
        accelerator_as_printed=config.accelerator_as_printed or config.accelerator,
        precision=catalog.normalize_precision(config.precision) if config.precision else None,
    )


def _one_name(printed: str | None) -> str | None:
    """The name as printed, or None when it joins several ("a | b": the log named more than one model, which is
    asked of the user, never resolved to whichever the catalog finds first in the joined text)."""
    return None if printed is None or " | " in printed else printed


@dataclass(frozen=True, slots=True)
class CatalogRows:
    """The catalog's rows for the run's model and accelerator (None where unknown or no store is at hand)."""

    model: Mapping[str, Any] | None = None
    accelerator: Mapping[str, Any] | None = None
    note: str | None = None  # where the rows came from, when not from the store


NOTHING_KNOWN = CatalogRows()
DEFAULT_RULE = SteadyRule()


def _shape(config: RunConfig, model_row: Mapping[str, Any] | None) -> fl.ModelShape | None:
    if (config.num_experts or 0) > 1 and model_row is None:
        return None  # the log's ffn_hidden_size is the dense FFN; expert FFN sizes are not in RunConfig
    if config.num_layers and config.hidden_size and config.num_attention_heads and config.ffn_hidden_size \
            and config.vocab_size:
        return fl.ModelShape(layers=config.num_layers, hidden=config.hidden_size, heads=config.num_attention_heads,
                             kv_heads=config.num_kv_heads or config.num_attention_heads,
                             ffn_hidden=config.ffn_hidden_size, vocab=config.vocab_size,
                             swiglu=bool(config.swiglu) if config.swiglu is not None
                             else (model_row or {}).get("ffn_kind") == "swiglu",
                             moe_top_k=config.moe_top_k or 1)
    if model_row is not None:
        try:
            return fl.ModelShape.from_row(model_row)
        except InvalidInput:
            return None
    return None


def summarize(parsed: ParseSummary, config: RunConfig, steps: pl.DataFrame | pl.LazyFrame,
              known: CatalogRows = NOTHING_KNOWN, rule: SteadyRule = DEFAULT_RULE, *,
              provenance: dict[str, Any] | None = None) -> RunSummary:
    """steps: a frame in any order, or a LazyFrame in step order (the pipeline's spool), which is read in
    streaming passes, so that memory does not grow with the number of steps."""
    warnings = list(parsed.warnings) + ([known.note] if known.note else [])
    why: dict[str, str] = {}
    provenance = dict(provenance or {})
    launches = _launches(steps)
    launch = chosen_launch(list(launches)).launch if launches else None
    if launch is not None:
        steps = steps.filter(pl.col("launch").fill_null(1) == launch)
        if "launch_summarised" not in parsed.meta:  # a reader that has not said so itself (Megatron's has)
            warnings.append(launches_note(list(launches), launch, parsed.meta.get("launch_lines") or {}))
    config = derived.batch_from_steps(steps, config, provenance)
    steps = _tokens_from_batch(steps, config, warnings)
    model_row, acc_row = known.model, known.accelerator
    shape = _shape(config, model_row)
    seq_len = config.seq_len or (model_row or {}).get("seq_len")
    f = _flops(shape, seq_len, config, why)
    rule = _with_limits(rule, f, acc_row, config)
    steady, by_clock = timed_by_clock(steps.lazy(), _steady(steps, rule, why))
    if steady is not None and steady.impossible:
        warnings.append(f"{steady.impossible:,} step(s) faster than the device can be (above the peak of "
                        f"{rule.max_tflops_per_device:,.0f} TFLOP/s per device at {config.precision}): physically "
                        "impossible (a step timed at its launch, not its end?), flagged and left out of the steady "
                        "window")
    if steady is not None and (flags := not_steady(steady)):
        warnings.append(f"not a steady state: {'; '.join(flags)}; the figures are over what there is")
    window, over = window_medians(steps.lazy(), steady.first_step if steady else None,
                                  steady.last_step if steady else None, config.printed_window)
    phases = phase_figures(steps.lazy(), steady.first_step, steady.last_step) if steady else {}
    config = derived.devices_from_rates(steady, window, config, provenance, parsed.meta.get("columns") or {},
                                        warnings)
    tps_dev = _tokens_per_s_per_device(steady, config, window, why, warnings)
    tflops = m.model_tflops(tps_dev, f) if tps_dev and f else None
    if tflops is None and "model_tflops_per_device" not in why:
        why["model_tflops_per_device"] = "needs tokens/s per device" if f else why.get("flops_per_token", "")
    mfu, peak = _mfu(tflops, acc_row, config, why)
    if f and (note := _workload_note(config.workload, mfu)) is not None:
        warnings.append(note)
    printed = run_figures(parsed.format, parsed.results, config)
    reported = reported_beside_ours(window, tps_dev, tflops, mfu, printed, over) | by_clock
    clocked = reported.pop("step_time_clock", None)
    if shape is not None and seq_len and tps_dev:
        # the convention is FLOPs per token: read at the log's own tokens/s where it prints them
        explain_tflops_difference(reported, shape, int(seq_len), reported.get("reported_tokens_per_s_per_device")
                                  or tps_dev, config.precision)
    steady_figures = ("mfu", "model_tflops_per_device", "tokens_per_s_per_device")
    for key, reason in why.items():  # a claims table has no steps: its figures are its rows, none is missing
        if key in steady_figures and reason and parsed.format is not LogFormat.CLAIMS_CSV:
            warnings.append(f"{key} not computed: {reason}")
    results = tuple(_resolved_result(r) for r in parsed.results) + derived_results(printed, config) + _measured_results(
        parsed, config, steady, tps_dev, tflops, mfu, phases.get("samples_per_s"))
    if not any(r.metric == "samples_per_s" for r in results) \
            and (implied := derived.samples_per_s(config, steady, steps, warnings)):
        results += (replace(implied, **_identity_of(config)),)
    return RunSummary(
        config=config.stated(), steady=steady, tokens_per_s_per_device=tps_dev, model_tflops_per_device=tflops,
        mfu=mfu, flops_per_token=f, flops_formula=fl.workload_title(config.workload) if f else None,
        peak=peak, warnings=tuple(dict.fromkeys(warnings)), why_missing=why, reported=reported, results=results,
        launches=launches, launch=launch, phases=phases, identity=provenance,
        step_time_source=clocked or step_time_source_text(parsed.meta.get("step_time_source") or {})
        if steady is not None and steady.timed_steps else None,
    )


def _tokens_from_batch(steps: pl.DataFrame | pl.LazyFrame, config: RunConfig,
                       warnings: list[str]) -> pl.DataFrame | pl.LazyFrame:
    """Steps whose log gives no tokens get them from the batch in force and the sequence length the run states:
    the step's own samples where logged (a ramp-up is kept), else the global batch."""
    seq = config.seq_len
    names = steps.collect_schema().names()
    if not (seq or config.tokens_per_step) or "tokens" not in names \
            or steps.lazy().select(pl.col("tokens").is_not_null().any()).collect().item():
        return steps
    per_step = "samples" in names and steps.lazy().select(pl.col("samples").is_not_null().any()).collect().item()
    if config.tokens_per_step:
        tokens = pl.lit(float(config.tokens_per_step))
        said = f"tokens per step = {config.tokens_per_step:,}, as the log states"
    elif per_step and seq:
        tokens = pl.col("samples") * seq
        said = f"tokens per step = the samples logged at that step x seq len {seq:,}"
    elif config.global_batch and seq:
        tokens = pl.lit(float(config.global_batch * seq))
        said = f"tokens per step = global batch {config.global_batch:,} x seq len {seq:,}, as the run states"
    else:
        return steps
    warnings.append(f"{said} (the log prints no tokens per step)")
    return steps.with_columns(tokens.cast(pl.Float64).alias("tokens"))


def _launches(steps: pl.DataFrame | pl.LazyFrame) -> tuple[LaunchSpan, ...]:
    """Every launch of the file when its steps hold more than one (one cheap pass to find out), else none."""
    if "launch" not in steps.collect_schema().names():
        return ()
    n = steps.lazy().select(pl.col("launch").fill_null(1).n_unique()).collect(engine="streaming").item()
    return tuple(launch_table(steps.lazy())) if n > 1 else ()


def _steady(steps: pl.DataFrame | pl.LazyFrame, rule: SteadyRule, why: dict[str, str]) -> SteadyState | None:
    if orderstats.count(steps.lazy().head(1)) == 0:
        why["steady_state"] = "the file has no training steps (a result file, or a summary only)"
        return None
    try:
        if isinstance(steps, pl.LazyFrame):
            return steady_state_of_ordered(steps, rule)
        return steady_state(steps.select([c for c in steady_columns(rule) if c in steps.columns]), rule)
    except InvalidInput as exc:
        why["steady_state"] = str(exc)
        return None


def _tokens_per_s_per_device(steady: SteadyState | None, config: RunConfig, window: dict[str, float | None],
                             why: dict[str, str], warnings: list[str]) -> float | None:
    if steady is not None and steady.tokens_per_s is not None:
        if config.n_devices:
            return steady.tokens_per_s / config.n_devices
        why["tokens_per_s_per_device"] = "the device count is unknown (pass --devices)"
        return None
    reported = window.get("reported_tokens_per_s_per_device")
    if reported is not None:
        warnings.append("tokens/s per device is the median of the log's own per-step figure "
                        "(the log gives no tokens per step to recompute it)")
        return reported
    why["tokens_per_s_per_device"] = "the log states neither tokens per step (batch x seq len) nor tokens/s"
    return None


def _flops(shape: fl.ModelShape | None, seq_len: Any, config: RunConfig, why: dict[str, str]) -> float | None:
    if shape is None:
        if (config.num_experts or 0) > 1 and not config.model:
            why["flops_per_token"] = "a mixture-of-experts model not in the catalog (pass --model)"
        else:
            why["flops_per_token"] = (f"model {config.model!r} has no architecture in the catalog" if config.model
                                      else "the model is unknown (pass --model)")
        why["model_tflops_per_device"] = why["flops_per_token"]
        return None
    if not seq_len:
        why["model_tflops_per_device"] = "the sequence length is unknown"
        return None
    return fl.workload_flops_per_token(shape, int(seq_len), config.workload)


def _with_limits(rule: SteadyRule, f: float | None, acc_row: Mapping[str, Any] | None, config: RunConfig) -> SteadyRule:
    """The rule with the fastest a step can be on this run's devices: the peak at the stated precision, and the
    tokens/s over all devices that peak allows under the run's FLOPs per token."""
    if acc_row is None or not config.precision or config.precision == "unstated":
        return replace(rule, max_tokens_per_s=None, max_tflops_per_device=None)
    try:
        peak = m.peak_tflops(acc_row, config.precision).tflops
    except InvalidInput:
        return replace(rule, max_tokens_per_s=None, max_tflops_per_device=None)
    limit = peak * 1e12 * config.n_devices / f if f and config.n_devices else None
    return replace(rule, max_tokens_per_s=limit, max_tflops_per_device=peak)


def _workload_note(workload: str | None, mfu: float | None) -> str | None:
    """What the FLOPs convention of a fine-tune or an RL run means for its model TFLOPS and MFU."""
    if workload in fl.WORKLOAD_CONVENTIONS:
        says = fl.WORKLOAD_CONVENTIONS[workload][1]  # "LoRA: the frozen weights ..."
        return f"a {says.split(':')[0]} run: model TFLOPS{' and MFU' if mfu is not None else ''} count {says}"
    if workload == "rlhf":
        return ("an RL run: model TFLOPS count the training FLOPs of the tokens trained on; the rollout's generation "
                "is not counted")
    return None


def _mfu(tflops: float | None, acc_row: Mapping[str, Any] | None, config: RunConfig,
         why: dict[str, str]) -> tuple[float | None, str | None]:
    if tflops is None:
        why["mfu"] = "needs model TFLOPS first"
        return None, None
    if acc_row is None:
        named = config.accelerator or config.accelerator_as_printed
        why["mfu"] = f"accelerator {named!r} is not in the catalog" if named else \
            "the accelerator is unknown (pass --accelerator)"
        return None, None
    if not config.precision or config.precision == "unstated":
        why["mfu"] = "the precision is unknown (pass --precision)"
        return None, None
    try:
        peak = m.peak_tflops(acc_row, config.precision)
    except InvalidInput as exc:
        why["mfu"] = str(exc)
        return None, None
    return m.mfu(tflops, peak.tflops), peak.describe()


def _resolved_result(record: ResultRecord) -> ResultRecord:
    return replace(
        record,
        accelerator_id=record.accelerator_id or catalog.resolve_or_none("accelerator", record.accelerator_as_printed),
        model_id=record.model_id or catalog.resolve_or_none("model", record.model_as_printed),
        precision=catalog.normalize_precision(record.precision) if record.precision else record.precision,
    )


def _identity_of(config: RunConfig) -> dict[str, Any]:
    """The run's configuration as a result row's fields."""
    return {"accelerator_id": config.accelerator, "accelerator_as_printed": config.accelerator_as_printed,
            "n_devices": config.n_devices, "framework": config.framework, "framework_version": config.framework_version,
            "model_id": config.model, "model_as_printed": config.model_as_printed, "workload": config.workload,
            "precision": config.precision or "unstated", "seq_len": config.seq_len, "global_batch": config.global_batch,
            "micro_batch": config.micro_batch, "tp": config.tp, "pp": config.pp, "dp": config.dp, "ep": config.ep,
            "cp": config.cp, "strategy": config.strategy}


def _measured_results(parsed: ParseSummary, config: RunConfig, steady: SteadyState | None, tps: float | None,
                      tflops: float | None, mfu: float | None,
                      samples_per_s: float | None = None) -> tuple[ResultRecord, ...]:
    """The run's steady-state figures as result rows, so they sit beside published claims on every page."""
    if steady is None:
        return ()
    mlperf = parsed.format.value == "mlperf"
    evidence = "derived" if mlperf else "measured"
    note = (f"steady state of an ingested {parsed.format.value} log, steps {steady.first_step}-{steady.last_step}"
            + ("; derived from an MLPerf result, not an official MLPerf metric (unverified)" if mlperf else ""))
    base = ResultRecord(
        metric="", value=0.0, unit="", accelerator_id=config.accelerator,
        accelerator_as_printed=config.accelerator_as_printed, n_devices=config.n_devices, framework=config.framework,
        framework_version=config.framework_version, model_id=config.model, model_as_printed=config.model_as_printed,
        workload=config.workload or "pretrain", precision=config.precision or "unstated", seq_len=config.seq_len,
        global_batch=config.global_batch, micro_batch=config.micro_batch, tp=config.tp, pp=config.pp, dp=config.dp,
        ep=config.ep, cp=config.cp, strategy=config.strategy, evidence=evidence, locator="steady-state window",
        note=note)
    figures = (("tokens_per_s_per_device", tps, "tokens/s/device"),
               ("model_tflops_per_device", tflops, "TFLOP/s/device"), ("mfu", mfu, "fraction"),
               ("step_time_s", steady.step_time_s_median, "s"), ("samples_per_s", samples_per_s, "samples/s"))
    return tuple(replace(base, metric=metric, value=value, unit=unit)
                 for metric, value, unit in figures if value is not None and math.isfinite(value))
