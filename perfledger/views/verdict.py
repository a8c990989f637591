"""A run's verdict (perfledger.calc.compare) from the store: its figures, the comparable published rows with their
audit verdicts, the differing fields, the gap split and where its wall time went (perfledger.calc.goodput).
`python -m perfledger compare` prints it; the run page shows it first."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, compare, goodput, metrics
from perfledger.calc import compare_rows as cr
from perfledger.calc import flops as fl
from perfledger.calc.steady import SteadyRule
from perfledger.errors import InvalidInput
from perfledger.records import RunRow
from perfledger.views import mlperf
from perfledger.views.long_runs import is_long
from perfledger.views.remembered import until_written

PUBLISHED = "published"
ROW_COLUMNS = ("id", "source_id", "model_id", "accelerator_id", "model_as_printed", "accelerator_as_printed",
               "n_devices", "framework", "framework_version", "workload", "precision", "seq_len", "global_batch",
               "micro_batch", "grad_accum", "tp", "pp", "dp", "ep", "cp", "strategy", "sparsity", "metric", "value",
               "unit", "locator", "note", "precision_as_printed", "attributes")
_RUN_KEYS = {"model": "model_id", "accelerator": "accelerator_id"}  # the rest of a run's config keys are the row's


def run_as_row(row: RunRow) -> dict[str, Any]:
    """A run's configuration under the result table's names (model -> model_id ...), its workload pretraining
    where the log states none (as its own result rows are stored)."""
    out = {_RUN_KEYS.get(k, k): v for k, v in row.config.items() if not isinstance(v, (dict, list))}
    out.setdefault("workload", "pretrain")
    return out | {"id": 0}


def headline(row: RunRow, time_to_train_s: float | None = None) -> compare.Headline:
    """The run's own figures, from its stored summary; the log's own MFU beside ours, its peak named as the log's
    (a fallback peak where the log says so)."""
    s = row.summary or {}
    meta = row.config.get("format_meta") or {}
    fallback = meta.get("mfu_peak_fallback")
    log_peak = (f"the log's fallback peak (A100), not this device's ({fallback})" if fallback
                else "the log's own peak" if (s.get("reported") or {}).get("reported_mfu") is not None else None)
    why = (s.get("why_missing") or {}).get("mfu") if s.get("mfu") is None else None
    return compare.Headline(
        tokens_per_s_per_device=s.get("tokens_per_s_per_device") or _per_device(row), model_tflops_per_device=s.get(
            "model_tflops_per_device"), mfu=s.get("mfu"), peak_used=s.get("peak"), flops_per_token=s.get(
            "flops_per_token"), flops_formula=s.get("flops_formula"), why_no_mfu=why,
        log_mfu=(s.get("reported") or {}).get("reported_mfu"), log_peak=log_peak, time_to_train_s=time_to_train_s)


def _per_device(row: RunRow) -> float | None:
    s, devices = row.summary or {}, row.config.get("n_devices")
    return s["tokens_per_s"] / devices if s.get("tokens_per_s") and devices else None


def verdict(engine: Engine, run_id: int, *, against: str = PUBLISHED, usd_per_device_hour: float | None = None,
            rule: SteadyRule | None = None) -> compare.Verdict:
    """The run's verdict against the comparable published figure (or against the run `against`); its reads share
    one connection."""
    with store.reading():
        return _verdict(engine, run_id, against, usd_per_device_hour, rule)


def _verdict(engine: Engine, run_id: int, against: str, usd_per_device_hour: float | None,
             rule: SteadyRule | None) -> compare.Verdict:
    row = _stored(engine, run_id)
    head = headline(row, _time_to_train(engine, row))
    if row.format == "mlperf":
        head = _with_mlperf_figures(engine, row, head)
    flow = goodput_of(engine, row, usd_per_device_hour, rule)
    base = compare.Verdict(row.id, _label(row), head, None, None, goodput=flow, against=against)
    if against != PUBLISHED:
        return _against_run(engine, base, row, _other_run(engine, against, run_id))
    if (why := why_not_compared(row, head)) is not None:
        return _replaced(base, reason=why)
    return _against_published(engine, base, row)


def _stored(engine: Engine, run_id: int) -> RunRow:
    row = store.run(engine, run_id)
    if row is None:
        raise InvalidInput(f"there is no run {run_id} in the store")
    return row


def _label(row: RunRow) -> str:
    c = row.config
    what = c.get("model") or c.get("model_as_printed") or "model unstated"
    on = c.get("accelerator") or c.get("accelerator_as_printed") or "device unstated"
    devices = f"{c['n_devices']:,} × " if c.get("n_devices") else ""
    return f"run {row.id} · {what} on {devices}{on}" + (f" · {c['precision']}" if c.get("precision") else "")


def why_not_compared(row: RunRow, head: compare.Headline) -> str | None:
    """Why the run cannot be set beside a published figure, in one sentence; None when it can be."""
    c, rid = row.config, row.id
    if row.format == "mlperf":
        return ("an MLPerf result is judged on its time to train, against results of the same benchmark (the MLPerf "
                "page), not on tokens/s against a vendor's figure")
    if not c.get("model"):
        return f"run {rid} states no model: set it with `python -m perfledger runs set {rid} model=ID`"
    if not c.get("accelerator"):
        printed = c.get("accelerator_as_printed")
        return (f"the run's device {printed!r} is not in the catalog: no peak and no published row to compare with"
                if printed else f"run {rid} states no accelerator: set it with `python -m perfledger runs set {rid} "
                "accelerator=ID`")
    if not c.get("precision"):
        return f"run {rid} states no precision, and figures at different precisions are not compared"
    if head.tokens_per_s_per_device is None:
        missing = ((row.summary or {}).get("why_missing") or {}).get("tokens_per_s_per_device")
        return f"run {rid} has no tokens/s per device" + (f" ({missing})" if missing else "")
    return None


def _replaced(base: compare.Verdict, **changes: Any) -> compare.Verdict:
    return replace(base, **changes)


def published_rows(engine: Engine, row: RunRow) -> list[dict[str, Any]]:
    """Every published row of the run's model and accelerator, with its source's publisher."""
    frame = store.results(engine, model_ids=[str(row.config["model"])], accelerator_ids=[str(row.config["accelerator"])],
                          published=True, columns=ROW_COLUMNS)
    publishers = dict(zip(*(store.sources(engine)[c].to_list() for c in ("id", "publisher")), strict=True))
    return [r | {"publisher": publishers.get(r["source_id"])} for r in frame.to_dicts()]


def _against_published(engine: Engine, base: compare.Verdict, row: RunRow) -> compare.Verdict:
    mine = run_as_row(row)
    everything = published_rows(engine, row)
    rows, match = compare.comparable_rows(mine, everything)
    if not rows:
        c = row.config
        return _replaced(base, reason=(f"no published tokens/s per device for {c['model']} on {c['accelerator']} at "
                                       f"{c['precision']} ({mine['workload']}) is stored in the ledger"))
    run_tps = float(base.headline.tokens_per_s_per_device or 0)
    chosen, why = compare.choose(mine, rows)
    listed = _comparables(engine, rows, everything, run_tps, int(chosen["id"]))
    published = compare.Published(int(chosen["id"]), chosen.get("source_id"), float(chosen["value"]),
                                  run_tps / float(chosen["value"]), why, match)
    side, note = _tflops(engine, row, run_tps, chosen, everything)
    return _replaced(base, published=published, comparable=listed, differences=cr.differences(mine, chosen),
                     gap=compare.gap(mine, run_tps, chosen, compare.setup_rows(mine, everything)),
                     tflops=side, tflops_note=note)


def _comparables(engine: Engine, rows: Sequence[Mapping[str, Any]], everything: Sequence[Mapping[str, Any]],
                 run_tps: float, chosen: int) -> tuple[compare.Comparable, ...]:
    partners = {int(r["id"]): compare.tflops_partner(r, everything) for r in rows}
    verdicts = audit_verdicts(engine, everything)
    out = []
    for r in sorted(rows, key=lambda r: (cr.version_key(r.get("framework_version")) or (), float(r["value"])),
                    reverse=True):
        s, p = cr.stated(r), partners[int(r["id"])]
        out.append(compare.Comparable(
            int(r["id"]), r.get("source_id"), r.get("framework"), r.get("framework_version"), s.get("precision_recipe"),
            r.get("n_devices"), r.get("global_batch"), float(r["value"]), run_tps / float(r["value"]),
            float(p["value"]) if p else None, int(p["id"]) if p else None,
            verdicts.get(int(p["id"])) if p else "no TFLOP/s printed beside it", int(r["id"]) == chosen))
    return tuple(out)


def audit_verdicts(engine: Engine, rows: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """The audit's verdict (perfledger.calc.audit) of each model-TFLOPS claim among `rows` (their model's and
    accelerator's published rows: every row the audit pairs a claim with)."""
    if not rows:
        return {}
    frame = pl.DataFrame([{k: r.get(k) for k in audit.INPUT_COLUMNS} for r in rows], infer_schema_length=None)
    audited = audit.audit_claims(frame, *store.catalog(engine))
    return {int(i): str(v) for i, v in audited.select("claim_id", "verdict").iter_rows()}


def _tflops(engine: Engine, row: RunRow, run_tps: float, chosen: Mapping[str, Any],
            everything: Sequence[Mapping[str, Any]]) -> tuple[compare.TflopsSideBySide | None, str]:
    partner = compare.tflops_partner(chosen, everything)
    if partner is None:
        return None, "the published row prints no TFLOP/s: compared on tokens/s per device only"
    shape, seq = _shape(engine, row), row.config.get("seq_len") or chosen.get("seq_len")
    if shape is None or not seq:
        return None, "the model's shape or the sequence length is unknown: TFLOP/s are not set side by side"
    side = compare.tflops_side_by_side(run_tps, float(chosen["value"]), float(partner["value"]), shape, int(seq),
                                       row.config.get("precision"))
    if side is None:
        return None, (f"the published {float(partner['value']):,.0f} TFLOP/s (result {partner['id']}) follows from its "
                      "tokens/s under no FLOPs count the ledger knows: TFLOP/s are not set side by side")
    return side, side.describe()


def _shape(engine: Engine, row: RunRow) -> fl.ModelShape | None:
    model, _ = store.catalog_rows(engine, row.config.get("model"), None)
    try:
        return fl.ModelShape.from_row(model) if model else None
    except InvalidInput:
        return None


def _other_run(engine: Engine, against: str, run_id: int) -> RunRow:
    if not against.strip().isdigit():
        raise InvalidInput(f"--against is 'published' or a run id, got {against!r}")
    other = _stored(engine, int(against))
    if other.id == run_id:
        raise InvalidInput(f"run {run_id} cannot be compared with itself")
    return other


def unlike(first: RunRow, second: RunRow) -> list[str]:
    """What makes two runs not like for like: model, accelerator, devices, precision or workload, in words (a field
    stated on one side only differs; one neither states does not)."""
    fields = (*cr.SETUP[:2], ("n_devices", "devices"), *cr.SETUP[2:])
    return cr.setup_differences(run_as_row(first), run_as_row(second), fields, both_unstated_same=True)


def _against_run(engine: Engine, base: compare.Verdict, row: RunRow, other: RunRow) -> compare.Verdict:
    differ = unlike(row, other)
    if differ:
        raise InvalidInput(f"run {row.id} and run {other.id} are not like for like: {'; '.join(differ)}")
    theirs = headline(other).tokens_per_s_per_device
    mine = base.headline.tokens_per_s_per_device
    if not mine or not theirs:
        return _replaced(base, reason=f"run {row.id if not mine else other.id} has no tokens/s per device")
    published = compare.Published(other.id, None, float(theirs), mine / theirs, f"the run named ({_label(other)})",
                                  "same model, accelerator, devices, precision and workload", label=f"run {other.id}'s")
    return _replaced(base, published=published, differences=cr.differences(run_as_row(row), run_as_row(other)),
                     gap=compare.Gap(mine / theirs, (), mine / theirs - 1))


def _with_mlperf_figures(engine: Engine, row: RunRow, head: compare.Headline) -> compare.Headline:
    """An MLPerf result's tokens/s and model TFLOP/s per device, derived from its time to train (views.mlperf)."""
    found = mlperf.headline(engine, row) or {}
    return replace(head, tokens_per_s_per_device=found.get(mlperf.DERIVED_TOKENS),
                   model_tflops_per_device=found.get(mlperf.DERIVED_TFLOPS))


def _time_to_train(engine: Engine, row: RunRow) -> float | None:
    values = store.results(engine, run_id=row.id, metric="time_to_train_s", columns=("value",))["value"]
    return float(values[0]) if values.len() else None


# ------------------------------------------------------------------------------------------------- goodput


def goodput_of(engine: Engine, row: RunRow, usd_per_device_hour: float | None = None,
               rule: SteadyRule | None = None) -> goodput.Goodput | None:
    """Where the run's wall time went; None for a run with no timed step (a result file, a summary)."""
    if row.n_steps == 0 or is_long(row):  # a run too long to hold: its steps are not read whole
        return None
    return _goodput(row.id, row.config.get("n_devices"), _span(row), usd_per_device_hour or None,
                    rule or _stored_rule(row), engine)


@until_written(keep=8)
def _goodput(run_id: int, devices: int | None, span: tuple[datetime, datetime] | None, usd: float | None,
             rule: SteadyRule, engine: Engine) -> goodput.Goodput | None:
    steps = store.steps(engine, run_id).select("step", "step_time_s", "tokens", "launch")
    phased = goodput.step_phases(steps, rule)
    if not phased.filter(pl.col("step_time_s").is_not_null()).height:
        return None
    return goodput.goodput(phased, printed_span=span, devices=devices, usd_per_device_hour=usd)


def _span(row: RunRow) -> tuple[datetime, datetime] | None:
    found = (row.config.get("format_meta") or {}).get("printed_span")
    return (datetime.fromisoformat(found[0]), datetime.fromisoformat(found[1])) if found else None


def _stored_rule(row: RunRow) -> SteadyRule:
    known = set(SteadyRule.__dataclass_fields__)
    return SteadyRule(**{k: v for k, v in ((row.summary or {}).get("rule") or {}).items() if k in known})


@until_written(keep=16)
def page_verdict(run_id: int, usd: float | None, rule: SteadyRule, engine: Engine) -> compare.Verdict:
    """verdict() as the run page asks it, remembered until the store is written to (a correction, say)."""
    return verdict(engine, run_id, usd_per_device_hour=usd, rule=rule)


def goodput_rows(engine: Engine, run_ids: Sequence[int]) -> pl.DataFrame:
    """One row per run: its wall time and each part in seconds, its productive share and effective tokens per
    device-hour (Campaigns shows it per run)."""
    rows = []
    for rid in run_ids:
        r = store.run(engine, rid)
        flow = goodput_of(engine, r) if r is not None and not is_long(r) else None
        if flow is not None:
            rows.append({"run": rid, "wall_s": flow.wall_s, **{p.name: p.seconds for p in flow.parts},
                         "productive share": flow.seconds("productive_s") / flow.wall_s if flow.wall_s else None,
                         "tokens per device-hour": flow.tokens_per_device_hour})
    schema = {"run": pl.Int64(), "wall_s": pl.Float64(), **{p: pl.Float64() for p in goodput.PARTS},
              "productive share": pl.Float64(), "tokens per device-hour": pl.Float64()}
    return pl.DataFrame(rows, schema=schema)


FORMULAS: tuple[Callable[..., Any], ...] = (compare.gap, goodput.goodput, metrics.model_tflops, metrics.mfu)
