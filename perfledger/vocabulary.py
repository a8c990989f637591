"""The one vocabulary of perfledger: metrics with their units, log formats, precisions, evidence levels.

Every other module imports these names; a string outside them is a bug or a user error, never a new value.
"""

from __future__ import annotations

from enum import StrEnum


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
    """A file format `python -m ingest` reads; detection order lives in ingest/detect.py."""

    MLPERF = "mlperf"
    MEGATRON = "megatron"
    MEGATRON_GOLDEN = "megatron_golden"
    DEEPSPEED = "deepspeed"
    NEMO = "nemo"
    DLLOGGER = "dllogger"
    HF_TRAINER_STATE = "hf_trainer_state"
    HF_TRAINER_LOG = "hf_trainer_log"
    HF_RESULTS_JSON = "hf_results_json"
    OPTIMUM_HABANA_BASELINES = "optimum_habana_baselines"
    TORCHTITAN = "torchtitan"
    NANOGPT = "nanogpt"
    LLMC = "llmc"
    CLAIMS_CSV = "claims_csv"
    MICROBENCH = "microbench"
    MAXTEXT = "maxtext"


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


class Workload(StrEnum):
    PRETRAIN = "pretrain"
    SFT = "sft"
    LORA_FINETUNE = "lora_finetune"
    RLHF = "rlhf"
    MICROBENCH = "microbench"
    INFERENCE = "inference"
    OTHER = "other"
