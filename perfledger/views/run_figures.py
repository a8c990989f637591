"""A run's figures on its page: the result rows it produced (time to train first; derived ones labelled), the log's
own figures beside the recomputed ones, and every published figure of its model, accelerator and workload."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import names, store
from perfledger.records import RunRow
from perfledger.views._shared import TFLOPS_METRIC, TOKEN_METRIC
from perfledger.views.mlperf import derived_tflops
from perfledger.vocabulary import Metric

MFU = Metric.MFU.value
# The log's own figures: (its key in the run's summary, the metric, the stored unit).
PRINTED_FIGURES = (("tokens_per_s_per_device", TOKEN_METRIC, "tokens/s/device"),
                   ("tflops_per_device", TFLOPS_METRIC, "TFLOP/s/device"), ("mfu", MFU, "fraction"))
PRINTED_SCHEMA = {"figure": pl.String(), "unit": pl.String(), "printed": pl.Float64(), "recomputed": pl.Float64(),
                  "relative_difference": pl.Float64(), "convention": pl.String(), "printed_over": pl.String()}


def printed_vs_recomputed(engine: Engine, run_id: int) -> pl.DataFrame:
    """The log's own figures (median over the steady window, or printed once for the run: `printed_over` says
    over what) beside the recomputed ones, with the relative difference (recomputed - printed) / printed and the
    FLOPs convention that reproduces the printed TFLOP/s."""
    r = store.run(engine, run_id)
    summary = (r.summary or {}) if r else {}
    reported = summary.get("reported") or {}
    over = reported.get("printed_over") or {}
    ours = {"tokens_per_s_per_device": summary.get("tokens_per_s_per_device"),
            "tflops_per_device": summary.get("model_tflops_per_device"), "mfu": summary.get("mfu")}
    rows = [{"figure": metric, "unit": unit, "printed": reported[f"reported_{name}"], "recomputed": ours[name],
             "relative_difference": reported.get(f"diff_{name}"),
             "convention": (reported.get("explanation") if name == "tflops_per_device" else None),
             "printed_over": over.get(name, "steady window, median of the per-step figure")}
            for name, metric, unit in PRINTED_FIGURES if reported.get(f"reported_{name}") is not None]
    return pl.DataFrame(rows, schema=PRINTED_SCHEMA)


# Figures stored for a run, in the order a reader looks for them: time to train first.
FIGURE_ORDER = tuple(m.value for m in (Metric.TIME_TO_TRAIN_S, Metric.TOKENS_PER_S, Metric.TOKENS_PER_S_PER_DEVICE,
                                        Metric.SAMPLES_PER_S, Metric.MODEL_TFLOPS_PER_DEVICE, Metric.MFU,
                                        Metric.STEP_TIME_S, Metric.MATMUL_TFLOPS))
FIGURE_LABELS = {m: names.metric_name(m) for m in FIGURE_ORDER}


def run_figures(engine: Engine, row: RunRow) -> pl.DataFrame:
    """The result rows a run produced (time to train first), each labelled with how it was obtained; for a run
    that states its device count, tokens/s per device derived from its tokens/s is added and labelled so, and model
    TFLOP/s per device from those tokens/s when the model and sequence length are known (views.mlperf)."""
    rows = store.results(engine, run_id=row.id, columns=["metric", "value", "unit", "evidence", "precision",
                                                         "n_devices", "note"])
    devices = row.config.get("n_devices")
    if devices and TOKEN_METRIC not in rows["metric"].to_list():
        per_device = rows.filter(pl.col("metric") == "tokens_per_s").with_columns(
            pl.lit(TOKEN_METRIC).alias("metric"), pl.col("value") / devices, pl.lit("tokens/s/device").alias("unit"),
            pl.lit("derived").alias("evidence"), pl.lit(f"tokens/s (all devices) / {devices} devices").alias("note"))
        rows = pl.concat([rows, per_device])
    stored = dict(zip(rows["metric"].to_list(), rows["value"].to_list(), strict=True))
    tflops = derived_tflops(row.config, row.summary, stored) if TFLOPS_METRIC not in stored else None
    if tflops is not None:
        fpt = float((row.summary or {})["flops_per_token"])
        rows = pl.concat([rows, pl.DataFrame([{
            "metric": TFLOPS_METRIC, "value": tflops, "unit": "TFLOP/s/device", "evidence": "derived",
            "precision": row.config.get("precision"), "n_devices": devices,
            "note": f"tokens/s/device x {fpt / 1e9:,.1f} GFLOP/token ({row.config.get('model')} at seq len "
                    f"{row.config.get('seq_len'):,}) / 1e12"}], schema=rows.schema)])
    rank = {m: i for i, m in enumerate(FIGURE_ORDER)}
    return rows.with_columns(  # a derived figure to 6 significant digits, as recomputed ones: not 772.9050683075516
        pl.when(pl.col("evidence") == "derived").then(pl.col("value").round_sig_figs(6)).otherwise(pl.col("value")),
        pl.col("metric").replace_strict(FIGURE_LABELS, default=pl.col("metric")).alias("figure"),
        pl.col("metric").replace_strict(rank, default=len(rank)).alias("_rank"),
    ).sort("_rank", maintain_order=True).select("figure", "value", "unit", "evidence", "precision", "n_devices", "note")


CLAIM_METRICS = (TOKEN_METRIC, TFLOPS_METRIC, "mfu")
CLAIM_COLUMNS = ("id", "metric", "value", "unit", "n_devices", "precision", "framework", "workload", "source_id")  # of 39
CLAIMS_SCHEMA: dict[str, pl.DataType] = {
    "figure from": pl.String(), "metric": pl.String(), "value": pl.Float64(), "unit": pl.String(),
    "n_devices": pl.Int64(), "precision": pl.String(), "framework": pl.String(), "workload": pl.String(),
    "source_id": pl.String(), "result id": pl.Int64()}


def nearest_claims(engine: Engine, run_id: int) -> pl.DataFrame:
    """Published tokens/s/device, TFLOPS and MFU rows for the run's model, accelerator and workload (a fine-tuning
    run is not set beside pretraining claims), after the run's own figures of those metrics (derived ones marked)."""
    with store.reading():  # one connection for its three reads
        r = store.run(engine, run_id)
        if r is None or not r.config.get("model") or not r.config.get("accelerator"):
            return pl.DataFrame(schema=CLAIMS_SCHEMA)
        workload = r.config.get("workload")
        published = store.results(engine, metric=list(CLAIM_METRICS), model_ids=[str(r.config["model"])],
                                  accelerator_ids=[str(r.config["accelerator"])], workload=workload, published=True,
                                  columns=CLAIM_COLUMNS).select(
            pl.lit("published").alias("figure from"), "metric", "value", "unit", "n_devices", "precision", "framework",
            "workload", "source_id", pl.col("id").alias("result id"))
        own = run_figures(engine, r).filter(pl.col("figure").is_in([FIGURE_LABELS[m] for m in CLAIM_METRICS]))
        mine = own.select(
            pl.format("this run ({})", pl.col("evidence")).alias("figure from"),
            pl.col("figure").replace_strict({FIGURE_LABELS[m]: m for m in CLAIM_METRICS}).alias("metric"),
            "value", "unit", "n_devices", "precision", pl.lit(r.config.get("framework")).alias("framework"),
            pl.lit(workload).alias("workload"), pl.lit(None, pl.String).alias("source_id"),
            pl.lit(None, pl.Int64).alias("result id"))
        return pl.concat([mine.cast(CLAIMS_SCHEMA), published.cast(CLAIMS_SCHEMA)])  # type: ignore[arg-type]
