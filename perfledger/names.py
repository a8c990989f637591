"""The names a reader reads: each metric's display name and the unit it is shown in, each stored column's display
name, on screen, in chart titles and legends and in CSV headers (the CLI's `--format json` keeps the stored names,
and the store its ids and units). Metric ids come from perfledger.vocabulary; nothing here is stored."""

from __future__ import annotations

import functools
import json
import re

import polars as pl

from perfledger.vocabulary import METRIC_UNITS, Metric

FRACTION = "fraction"  # a stored unit
PERCENT = "%"  # the unit every share stored as a fraction reads in

METRIC_NAMES: dict[Metric, str] = {
    Metric.TOKENS_PER_S_PER_DEVICE: "tokens/s/device",
    Metric.TOKENS_PER_S: "tokens/s (all devices)",
    Metric.SAMPLES_PER_S: "samples/s",
    Metric.STEP_TIME_S: "step time",
    Metric.MODEL_TFLOPS_PER_DEVICE: "model TFLOP/s/device",
    Metric.MFU: "MFU",
    Metric.HFU: "HFU",
    Metric.RELATIVE_THROUGHPUT: "relative throughput",
    Metric.SCALING_EFFICIENCY: "scaling efficiency",
    Metric.TIME_TO_TRAIN_S: "time to train",
    Metric.ENERGY_J: "energy",
    Metric.COST_USD: "cost",
    Metric.AGGREGATE_PFLOPS: "aggregate PFLOP/s",
    Metric.PCT_OF_PEAK: "share of peak",
    Metric.EST_DAYS_TO_TRAIN_10T_TOKENS_1K_GPUS: "estimated time to train 10T tokens on 1k GPUs",
    Metric.EST_DAYS_TO_TRAIN_1T_TOKENS_1K_GPUS: "estimated time to train 1T tokens on 1k GPUs",
    Metric.EST_MINUTES_TO_FINETUNE_10M_TOKENS: "estimated time to fine-tune 10M tokens",
    Metric.N_DEVICES_LARGEST_SUBMISSION: "devices in the largest submission",
    Metric.MATMUL_TFLOPS: "matmul TFLOP/s/device",
}
SHOWN_IN_PERCENT = frozenset(m for m, unit in METRIC_UNITS.items() if unit == FRACTION)

# Stored column names (and the run summary's keys) as a reader reads them; a metric id reads as its title.
COLUMN_NAMES = {
    "source_id": "source", "model_id": "model", "accelerator_id": "accelerator", "n_devices": "devices",
    "seq_len": "seq len", "dp": "data-parallel size", "global_batch": "global batch", "micro_batch": "micro batch", "grad_accum": "gradient accumulation",
    "framework_version": "framework version", "file_name": "file", "file_bytes": "file size (bytes)",
    "ingested_at": "ingested (UTC)", "ran_at": "ran (UTC)", "n_steps": "steps", "skipped_lines": "skipped lines",
    "claim_id": "claim", "rel_diff": "difference", "relative_difference": "relative difference",
    "n_results": "result rows", "step_time_s_median": "median step time (s)", "jitter_cv": "jitter (CV)",
    "jitter_p99_p50": "jitter (p99/p50)", "mfu_at_stated_precision": "MFU at stated precision",
    "printed_over": "printed over", "input_source": "inputs' rows", "run_id": "run", "imported_at": "imported (UTC)",
    "score_unit": "score unit", "score_rule": "score rule", "score_note": "score note", "peak_used": "peak used",
    "memory_gb": "memory (GB)", "mem_bw_tbps": "bandwidth (TB/s)", "tdp_w": "TDP (W)", "unit_basis": "unit basis",
    "devices_per_package": "devices per package", "printed_name": "name as printed",
    "model_as_printed": "model as printed", "accelerator_as_printed": "accelerator as printed",
    "precision_as_printed": "precision as printed", "source_url": "source URL", "source_title": "source title",
    "source_date": "source date", "source_kind": "source kind", "accelerator_name": "accelerator name",
    "accelerator_vendor": "accelerator vendor", "model_name": "model name", "content_sha256": "content SHA-256",
    "first_step": "first step", "last_step": "last step", "wall_time_s": "wall time (s)", "tokens_seen": "tokens seen",
    "elapsed_s": "wall clock (s)", "grad_norm": "gradient norm", "lr": "learning rate", "generation_s": "generation (s)",
    "training_s": "training (s)", "not_measured": "not measured", "steps_in_window": "steady steps",
    "warmup_steps": "warm-up steps", "timed_steps": "timed steps", "flops_per_token": "FLOPs per token",
    "flops_formula": "FLOPs formula", "step_time_source": "step time from", "rule_text": "steady-state rule",
    "not_steady": "not steady because", "why_missing": "why not computed", "format_meta": "what the file states",
    "tflops_per_device": "TFLOP/s/device", "moe_experts": "MoE experts", "moe_top_k": "MoE top-k",
    "kv_heads": "KV heads", "ffn_hidden": "FFN hidden", "ffn_kind": "FFN kind", "active_params": "active params",
    "tied_embeddings": "tied embeddings", "head_dim": "head dim", "fp32_tflops": "fp32 TFLOP/s",
    "tf32_tflops": "tf32 TFLOP/s", "fp16_tflops": "fp16 TFLOP/s", "bf16_tflops": "bf16 TFLOP/s",
    "fp8_tflops": "fp8 TFLOP/s", "row_key": "row key",
}
# Columns of shares stored as fractions (beside the metrics SHOWN_IN_PERCENT): shown x 100, labelled "(%)".
SHARE_COLUMNS = frozenset({"rel_diff", "relative_difference", "tolerance", "mfu_at_stated_precision",
                           "scaling efficiency", "worse than before", "of reference", "MFU vs measured peak",
                           "reported_mfu", "generation_share", "training_share", "productive share",
                           "productive_share", "run / row", "share"})
RELATION_CELLS = ("global_batch", "n_devices", "dp")  # configuration cells data/relations.csv checks
_PRINTED = "reported_"  # a per-step column holding the log's own figure


def metric_name(metric: str) -> str:
    """A metric's display name ("tokens_per_s_per_device" -> "tokens/s/device"); any other text as it is."""
    return METRIC_NAMES.get(Metric(metric), metric) if metric in _METRIC_IDS else metric


def shown_unit(metric: str) -> str:
    """The unit a metric reads in on every surface: "%" for a share stored as a fraction, else its stored unit."""
    if metric not in _METRIC_IDS:
        return ""
    return PERCENT if Metric(metric) in SHOWN_IN_PERCENT else METRIC_UNITS[Metric(metric)]


def metric_title(metric: str) -> str:
    """A metric's name with the unit it reads in, for a column or an axis: "MFU (%)", "step time (s)",
    "tokens/s/device" (a name that is its unit says it once)."""
    name, unit = metric_name(metric), shown_unit(metric)
    return name if not unit or "/" in name or unit in name.split() else f"{name} ({unit})"


@functools.cache
def metric_names() -> dict[str, str]:
    """{metric id: display name} for every metric (Polars' replace), and for the configuration cells the audit's
    relations judge (a row's global batch, devices, data-parallel size)."""
    return {**{m.value: metric_name(m.value) for m in Metric}, **{c: COLUMN_NAMES[c] for c in RELATION_CELLS}}


_METRIC_IDS = frozenset(m.value for m in Metric)


@functools.cache
def column_labels() -> dict[str, str]:
    """{stored name: display name} of every stored column and metric (Polars' replace)."""
    return {c: column_label(c) for c in (*COLUMN_NAMES, *_METRIC_IDS)}


def is_share(column: str) -> bool:
    """Whether a table column holds a share stored as a fraction (read in %)."""
    base = column.removeprefix(_PRINTED)
    return column in SHARE_COLUMNS or (base in _METRIC_IDS and Metric(base) in SHOWN_IN_PERCENT)


def column_label(column: str) -> str:
    """A table column as a reader reads it: a metric's title, a stored column's display name, a log's own figure
    "... as printed", a share with "(%)"; a column already named for a reader as it is."""
    if column.startswith(_PRINTED):
        name, bracket, unit = column_label(column.removeprefix(_PRINTED)).partition(" (")
        return f"{name} as printed{bracket}{unit}"
    if column in _METRIC_IDS:
        return metric_title(column)
    label = COLUMN_NAMES.get(column, column)
    return f"{label} (%)" if is_share(column) and not label.endswith("(%)") else label


def labelled(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with each column under its display name (a name two columns would share: both keep theirs)."""
    wanted = [column_label(c) for c in frame.columns]
    clashing = {label for label in wanted if wanted.count(label) > 1}
    return frame.rename({c: label for c, label in zip(frame.columns, wanted, strict=True)
                         if label != c and label not in clashing})


def column_of(label: str, columns: list[str]) -> str:
    """The column of `columns` a reader's label names (a sort key typed from a CSV header); "" when none does."""
    return next((c for c in columns if c == label), "") or next((c for c in columns if column_label(c) == label), "")


_ID_IN_TEXT = re.compile(r"(?<![A-Za-z0-9.])(" + "|".join(sorted(map(re.escape, _METRIC_IDS), key=len, reverse=True))
                         + r")(?![A-Za-z0-9])")


def settings_in_words(text: str) -> str:
    """A configuration stored as a JSON object, as a reader reads it ("devices 8 · tp 2 · pp 4"); any other text
    as it is.

    >>> settings_in_words('{"n_devices": 8, "pp": 4, "tp": 2}'), settings_in_words("h100-sxm · 8")
    ('devices 8 · pp 4 · tp 2', 'h100-sxm · 8')
    """
    try:
        settings = json.loads(text) if text.startswith("{") else None
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        return text
    return " · ".join(f"{column_label(k).replace('_', ' ')} {v}" for k, v in settings.items() if v not in (None, ""))


def in_words(sentence: str) -> str:
    """A sentence written for the command line with each metric id named as a reader reads it:
    "tokens_per_s_per_device not computed: ..." -> "tokens/s/device not computed: ..."."""
    return _ID_IN_TEXT.sub(lambda m: metric_name(m.group(1)), sentence)
