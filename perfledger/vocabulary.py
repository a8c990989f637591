"""The one vocabulary of perfledger: metrics with their units, log formats, precisions, evidence levels.

Every other module imports these names; a string outside them is a bug or a user error, never a new value.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from perfledger.errors import DataFileError


class Metric(StrEnum):
    """A measured or reported quantity; the value is stored in `unit` and nothing else."""

    TOKENS_PER_S_PER_DEVICE = "tokens_per_s_per_device"
    TOKENS_PER_S = "tokens_per_s"
    SAMPLES_PER_S = "samples_per_s"
    STEP_TIME_S = "step_time_s"
    MODEL_TFLOPS_PER_DEVICE = "model_tflops_per_device"
    MFU = "mfu"
    HFU = "hfu"
    RELATIVE_THROUGHPUT = "relative_throughput"
    SCALING_EFFICIENCY = "scaling_efficiency"
    TIME_TO_TRAIN_S = "time_to_train_s"
    ENERGY_J = "energy_j"
    COST_USD = "cost_usd"
    AGGREGATE_PFLOPS = "aggregate_pflops"
    PCT_OF_PEAK = "pct_of_peak"
    EST_DAYS_TO_TRAIN_10T_TOKENS_1K_GPUS = "est_days_to_train_10T_tokens_1k_gpus"
    EST_DAYS_TO_TRAIN_1T_TOKENS_1K_GPUS = "est_days_to_train_1T_tokens_1k_gpus"
    EST_MINUTES_TO_FINETUNE_10M_TOKENS = "est_minutes_to_finetune_10M_tokens"
    N_DEVICES_LARGEST_SUBMISSION = "n_devices_largest_submission"
    MATMUL_TFLOPS = "matmul_tflops"

    @property
    def unit(self) -> str:
        return METRIC_UNITS[self]


METRIC_UNITS: dict[Metric, str] = {
    Metric.TOKENS_PER_S_PER_DEVICE: "tokens/s/device",
    Metric.TOKENS_PER_S: "tokens/s",
    Metric.SAMPLES_PER_S: "samples/s",
    Metric.STEP_TIME_S: "s",
    Metric.MODEL_TFLOPS_PER_DEVICE: "TFLOP/s/device",
    Metric.MFU: "fraction",
    Metric.HFU: "fraction",
    Metric.RELATIVE_THROUGHPUT: "x",
    Metric.SCALING_EFFICIENCY: "fraction",
    Metric.TIME_TO_TRAIN_S: "s",
    Metric.ENERGY_J: "J",
    Metric.COST_USD: "USD",
    Metric.AGGREGATE_PFLOPS: "PFLOP/s",
    Metric.PCT_OF_PEAK: "%",
    Metric.EST_DAYS_TO_TRAIN_10T_TOKENS_1K_GPUS: "days",
    Metric.EST_DAYS_TO_TRAIN_1T_TOKENS_1K_GPUS: "days",
    Metric.EST_MINUTES_TO_FINETUNE_10M_TOKENS: "min",
    Metric.N_DEVICES_LARGEST_SUBMISSION: "devices",
    Metric.MATMUL_TFLOPS: "TFLOP/s/device",
}


class LogFormat(StrEnum):
    """The grammar a log is read by (closed); the framework that wrote it is data (data/frameworks.csv, the key
    vocabulary), stored in the run's configuration. Detection order lives in ingest/parsers/__init__.py."""

    MLPERF = "mlperf"
    MEGATRON = "megatron"
    MEGATRON_GOLDEN = "megatron_golden"
    DEEPSPEED = "deepspeed"
    NEMO = "nemo"
    HF_TRAINER_STATE = "hf_trainer_state"
    OPTIMUM_HABANA_BASELINES = "optimum_habana_baselines"
    TORCHTITAN = "torchtitan"
    CLAIMS_CSV = "claims_csv"
    MICROBENCH = "microbench"
    METRICS = "metrics"  # record streams: JSON lines, CSV / TSV, JSON documents
    KEY_VALUE = "key_value"  # console lines: named values, printed dicts, progress bars, blocks, box tables
    TENSORBOARD = "tensorboard"

    @classmethod
    def _missing_(cls, value: object) -> LogFormat | None:
        """A format name stored before the frameworks became data: the grammar that reads those logs now."""
        return cls(_LEGACY_FORMATS[value]) if isinstance(value, str) and value in _LEGACY_FORMATS else None


_LEGACY_FORMATS = {"nanogpt": "key_value", "llmc": "key_value", "maxtext": "key_value", "composer": "key_value",
                   "hf_trainer_log": "key_value", "dllogger": "metrics", "wandb_history": "metrics",
                   "hf_results_json": "metrics"}


class Precision(StrEnum):
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    FP4 = "fp4"
    UNSTATED = "unstated"


# Dense-peak columns on the accelerator table, by precision; fp4 has no column (no peak stored).
PEAK_COLUMN: dict[Precision, str] = {
    Precision.FP32: "fp32_tflops",
    Precision.TF32: "tf32_tflops",
    Precision.FP16: "fp16_tflops",
    Precision.BF16: "bf16_tflops",
    Precision.FP8: "fp8_tflops",
}


class Evidence(StrEnum):
    REPORTED = "reported"
    DERIVED = "derived"
    MEASURED = "measured"
    EXTRAPOLATED = "extrapolated"


class SourceKind(StrEnum):
    VENDOR = "vendor"
    PAPER = "paper"
    TALK = "talk"
    MLPERF = "mlperf"
    PRESS = "press"
    DOCS = "docs"
    UPLOAD = "upload"
    CLI = "cli"
    BENCHMARK = "benchmark"


class OutcomeKind(StrEnum):
    """How one attempt in a campaign ended: a failure is kept with its reason, never dropped."""

    COMPLETED = "completed"
    OUT_OF_MEMORY = "oom"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    NAN = "nan"  # the loss became NaN
    NO_STEPS = "no_steps"  # the log holds no training step
    FAILED = "failed"  # any other failure (a crash, an MLPerf run that did not converge)

    @property
    def failed(self) -> bool:
        return self is not OutcomeKind.COMPLETED


class CampaignKind(StrEnum):
    MLPERF = "mlperf"  # one MLPerf submission: result files of one benchmark and the system description
    SWEEP = "sweep"  # logs of several configurations, with the sweep's config files
    JOB_TABLE = "job table"  # a table of jobs and their outcomes (llmb-run's jobs.sqlite3)
    FOLDER = "folder"  # logs, nothing more known


class Workload(StrEnum):
    PRETRAIN = "pretrain"
    SFT = "sft"
    LORA_FINETUNE = "lora_finetune"
    RLHF = "rlhf"
    MICROBENCH = "microbench"
    INFERENCE = "inference"
    OTHER = "other"


# ------------------------------------------------------------------------------ reading names as printed
# Every reader of a printed precision, unit, metric or evidence word (calc, the claims import, the log parsers,
# the dashboard) goes through the functions below, so what one accepts, all accept.


def _key(text: str) -> str:
    """Lower case, letters, digits, "%" and "/" only: "TFLOP/s per GPU" -> "tflop/spergpu"."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch in "%/")


def _without_asides(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


# Whole-text spellings the precision grammar (perfledger.quantities) cannot read from parts: a word with no format
# in it ("full", "amp", "16-mixed") or one that says none is stated. Everything else is read by the grammar.
_PRECISION_WORDS: dict[Precision, tuple[str, ...]] = {
    Precision.FP32: ("full", "32true"),
    Precision.FP16: ("amp", "16mixed"),
    Precision.UNSTATED: ("", "unstated", "notstated", "none", "unknown", "na", "n/a", "-"),
}
PRECISION_ALIASES: dict[str, Precision] = {_key(w): p for p, words in _PRECISION_WORDS.items() for w in words}


@dataclass(frozen=True, slots=True)
class PrecisionReading:
    """A precision as printed, read: the stored Precision, the one whose dense peak MFU uses, and for a mixed
    recipe the sentence that keeps its meaning."""

    precision: Precision
    mfu_peak: Precision
    meaning: str | None = None


def read_precision(text: str | None) -> PrecisionReading | None:
    """The reading of a printed precision, or None when it names no precision: whole-text spellings first, then
    the grammar (the formats it names; of a mixed recipe the lowest, the one its matmuls run in; of clauses with
    roles, the training one's).

    >>> read_precision("amp_bf16").precision, read_precision("BF16 + Float8 linears").mfu_peak
    (<Precision.BF16: 'bf16'>, <Precision.FP8: 'fp8'>)
    >>> read_precision("Training BF16, Generation FP8").precision
    <Precision.BF16: 'bf16'>
    """
    # a cycle: quantities imports vocabulary (Metric, Precision) at module level
    from perfledger.quantities import precision_by_grammar

    raw = (text or "").strip()
    if _key(_without_asides(raw)).startswith("notstated"):
        return PrecisionReading(Precision.UNSTATED, Precision.UNSTATED)
    if (whole := PRECISION_ALIASES.get(_key(raw))) is not None:
        return PrecisionReading(whole, whole)
    if (read := precision_by_grammar(raw)) is not None:
        return read
    aside = PRECISION_ALIASES.get(_key(_without_asides(raw)))  # "full (see note)"
    return PrecisionReading(aside, aside) if aside is not None else None


def normalize_precision(text: str | None) -> str:
    """A Precision value for a precision as printed: "BF16" -> "bf16", "FP8-CS" -> "fp8", "" -> "unstated".

    Anything starting with "not stated" is unstated; an unrecognized text is also unstated (the caller keeps
    the printed text in a note).

    >>> normalize_precision("FP8-CS"), normalize_precision("not stated (bf16 likely)"), normalize_precision("amp_fp8")
    ('fp8', 'unstated', 'fp8')
    """
    reading = read_precision(text)
    return (reading.precision if reading else Precision.UNSTATED).value


# Unit spellings are data: data/units.csv (metric, spelling, factor), one spelling a row, read once and checked row
# by row; a user adds a spelling publishers print with one line. An empty unit is the metric's own.
UNITS_FILE = Path(__file__).resolve().parents[1] / "data" / "units.csv"
UNITS_HEADER = ("metric", "spelling", "factor")


def _spelling_rows(path: Path, header: tuple[str, ...]) -> Iterator[tuple[int, Metric, str, list[str]]]:
    """(line, metric, spelling key, cells) of each row of a spellings file (a metric, a spelling, then `header`'s
    further columns); a bad header or row raises DataFileError naming its line. Blank and `#` rows are passed."""
    metrics = {m.value: m for m in Metric}
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        if tuple(next(rows, ())) != header:
            raise DataFileError(path.name, 1, f"header must be {','.join(header)}")
        for line, cells in enumerate(rows, 2):
            if not cells or cells[0].startswith("#"):
                continue
            if len(cells) != len(header) or cells[0] not in metrics or not _key(cells[1]):
                raise DataFileError(path.name, line, f"expected {','.join(header)} with a known metric "
                                                     f"({', '.join(metrics)}) and a spelling")
            yield line, metrics[cells[0]], _key(cells[1]), cells


def read_units(path: Path) -> dict[tuple[Metric, str], float]:
    """{(metric, spelling key): factor} from a units file; a bad row raises DataFileError naming its line."""
    out: dict[tuple[Metric, str], float] = {}
    for line, metric, key, cells in _spelling_rows(path, UNITS_HEADER):
        try:
            factor = float(cells[2])
        except ValueError:
            factor = math.nan
        if not math.isfinite(factor) or factor <= 0:
            raise DataFileError(path.name, line, f"factor {cells[2]!r} is not a positive number")
        out[(metric, key)] = factor
    return out


@functools.cache
def unit_table() -> dict[tuple[Metric, str], float]:
    """The units file's spellings, read once per process."""
    return read_units(UNITS_FILE)


def unit_factor(metric: Metric, unit: str) -> float | None:
    """What a value printed in `unit` is multiplied by to be in `metric.unit`, or None for a unit the metric
    cannot be in: the units file's spellings first (what the grammar cannot derive: "%", "WPS"), then the unit
    grammar (perfledger.quantities: prefix x quantity / time / device noun). An aside in parentheses ("% (BF16
    MFU)") does not change the factor.

    >>> unit_factor(Metric.MFU, "% (BF16 MFU)"), unit_factor(Metric.MODEL_TFLOPS_PER_DEVICE, "TFLOPs/sec/chip")
    (0.01, 1.0)
    """
    # a cycle: quantities imports vocabulary (Metric, Precision) at module level
    from perfledger.quantities import unit_factor_of

    table = unit_table()
    for candidate in (_key(unit), _key(_without_asides(unit))):
        if not candidate:
            return 1.0
        if (metric, candidate) in table:
            return table[(metric, candidate)]
    if _key(unit) == _key(metric.unit):
        return 1.0
    return unit_factor_of(metric, unit)


def unit_spellings(metric: Metric) -> list[str]:
    """The spelling keys the units file knows for a metric (for a refusal that lists them)."""
    return sorted(spelling for m, spelling in unit_table() if m is metric)


def metric_of_unit(text: str) -> Metric | None:
    """The one metric a printed unit belongs to ("WPS", "TFLOP/sec/chip", "Tokens / sec / GPU" as a column name):
    a units-file spelling of one metric, else what the unit grammar reads; None when several could be meant."""
    # a cycle: quantities imports vocabulary (Metric, Precision) at module level
    from perfledger.quantities import metric_of_unit_reading, parse_unit

    found = {m for m, spelling in unit_table() if spelling == _key(text)}
    if len(found) == 1:
        return found.pop()
    reading = parse_unit(text)
    return metric_of_unit_reading(reading) if reading is not None and not found else None


def unit_peak(unit: str) -> Precision | None:
    """The precision whose peak a printed MFU unit names ("% (BF16 MFU)" -> bf16), else None."""
    words = _key(unit.replace("(", " ").replace(")", " "))
    found = [p for p in (Precision.BF16, Precision.FP16, Precision.FP8, Precision.TF32) if p.value in words]
    return found[0] if len(found) == 1 else None


# Metric names are data as well: data/metric_names.csv (metric, spelling), the names publishers print for a metric
# ("Model flops utilization", "Training step time (seconds per step)"); a user adds one with a line. A metric's own
# name always reads, and so does a column named by a unit spelling that belongs to one metric (metric_of_unit).
METRIC_NAMES_FILE = Path(__file__).resolve().parents[1] / "data" / "metric_names.csv"
METRIC_NAMES_HEADER = ("metric", "spelling")


def read_metric_names(path: Path) -> dict[str, Metric]:
    """{spelling key: metric} from a metric names file; a bad row raises DataFileError naming its line."""
    return {key: metric for _, metric, key, _ in _spelling_rows(path, METRIC_NAMES_HEADER)}


@functools.cache
def metric_name_table() -> dict[str, Metric]:
    """Every metric's own name and the names file's spellings, read once per process."""
    return {**{_key(m.value): m for m in Metric}, **read_metric_names(METRIC_NAMES_FILE)}


def read_metric(text: str) -> Metric | None:
    """The Metric a printed metric name means ("MFU", "tokens/s/GPU", "tokens_per_s_per_device"), or None; a
    column named by its unit ("TFLOP/sec/chip", "WPS") means the one metric that unit belongs to, and a name with its
    unit in parentheses ("Total Step time(s)", "Step time (seconds)") is read by its name.

    >>> read_metric("Total Step time(s)"), read_metric("Tokens / sec / GPU")
    (<Metric.STEP_TIME_S: 'step_time_s'>, <Metric.TOKENS_PER_S_PER_DEVICE: 'tokens_per_s_per_device'>)
    """
    # a cycle: quantities imports vocabulary (Metric, Precision) at module level
    from perfledger.quantities import plain_header, unit_in_name, unit_suffix

    names = metric_name_table()
    aside = unit_in_name(text) if "(" in text else None  # "Throughput (tok/s/GPU)": the unit says which throughput
    found = (names.get(_key(text)) or metric_of_unit(text) or (metric_of_unit(aside) if aside else None)
             or names.get(_key(_without_asides(text))))
    if found is None and (plain := plain_header(text)) != text:
        return read_metric(plain)
    return found or (metric_of_unit(ending) if (ending := unit_suffix(text)) else None)


_EVIDENCE_WORDS: dict[Evidence, tuple[str, ...]] = {
    Evidence.REPORTED: ("reported", "published", "claimed", "stated", "vendor", "quoted", "primary", "secondary"),
    Evidence.DERIVED: ("derived", "computed", "calculated", "recomputed", "implied"),
    Evidence.MEASURED: ("measured", "observed", "benchmarked", "logged", "own"),
    Evidence.EXTRAPOLATED: ("extrapolated", "estimated", "projected", "estimate", "projection", "simulated"),
}
EVIDENCE_ALIASES: dict[str, Evidence] = {_key(w): e for e, ws in _EVIDENCE_WORDS.items() for w in ws}


def read_evidence(text: str) -> Evidence | None:
    """The Evidence level a printed word means ("published" -> reported), or None when it names none."""
    key = _key(_without_asides(text))
    if key in EVIDENCE_ALIASES:
        return EVIDENCE_ALIASES[key]
    first = _key(text.split()[0]) if text.split() else ""
    return EVIDENCE_ALIASES.get(first)
