"""Canonical ids for accelerators and models, and the aliases that resolve to them.

Names are matched after normalization (case, spaces and punctuation ignored), in three tries: the whole name,
the name without parenthesized asides ("NVIDIA H100 (Eos)" -> "NVIDIA H100"), and the name without vendor,
system and form-factor words ("NVIDIA DGX-H100", "NVIDIA H100 80GB HBM3"). An unknown name raises
`UnknownId` with the three nearest canonical ids.

`unit_basis` on the accelerator table says what one peak figure covers: "GPU" (one GPU), "package" (an
MI250/MI250X package of `devices_per_package` GCDs; a framework device is one GCD), "chip" (TPU, Gaudi),
"IPU", "RDU", or "system" (one Cerebras CS-2).
"""

from __future__ import annotations

import difflib
import re

from perfledger.errors import UnknownId
from perfledger.vocabulary import Precision

ACCELERATOR_IDS: tuple[str, ...] = (
    "a100-40gb",
    "a100-80gb",
    "a800-80gb",
    "h100-sxm",
    "h100-pcie",
    "h800",
    "h200",
    "gh200",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "v100-32gb",
    "mi250",
    "mi250x",
    "mi300x",
    "mi355x",
    "gaudi2",
    "gaudi3",
    "cs-2",
    "sn30",
    "bow-ipu",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
)

MODEL_IDS: tuple[str, ...] = (
    "llama2-7b",
    "llama2-13b",
    "llama2-70b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "llama4-scout",
    "gpt3-126m",
    "gpt3-2b",
    "gpt3-5b",
    "gpt3-6.7b",
    "gpt3-20b",
    "gpt3-30b",
    "gpt3-175b",
    "gpt2-xl",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "nemotron-8b",
    "nemotron-15b",
    "nemotron-22b",
    "nemotron-340b",
    "nemotron3-nano",
    "nemotron3-super",
    "nemotron3-ultra",
    "nemotron3.5-lightning",
    "qwen2.5-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "deepseek-v4-flash",
    "kimi-k2",
    "gpt-oss-120b",
    "genslm-1.5b",
    "genslm-13b",
    "megatron-gpt-1.7b",
    "megatron-gpt-3.6b",
    "megatron-gpt-7.5b",
    "megatron-gpt-18b",
    "megatron-gpt-22b",
    "megatron-gpt-39b",
    "megatron-gpt-76b",
    "megatron-gpt-145b",
    "megatron-gpt-310b",
    "megatron-gpt-530b",
    "megatron-gpt-1t",
    "mcore-gpt-1.7b",
    "mcore-gpt-7.1b",
    "mcore-gpt-16b",
    "mcore-gpt-32b",
    "mcore-gpt-70b",
    "mcore-gpt-119b",
    "mcore-gpt-177b",
    "mcore-gpt-314b",
    "mcore-gpt-462b",
)

# Alias -> canonical id. Keys are written as people and tools print them; they are normalized at import.
ACCELERATOR_ALIASES: dict[str, str] = {
    "A100 40GB": "a100-40gb",
    "A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100 40GB (Polaris, 4 per node)": "a100-40gb",
    "A100 SXM4 40GB": "a100-40gb",
    "A100 80GB": "a100-80gb",
    "A100-80GB": "a100-80gb",
    "A100-SXM4-80GB": "a100-80gb",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA A100 80GB PCIe": "a100-80gb",
    "NVIDIA A100 80GB (Selene, DGX A100)": "a100-80gb",
    "NVIDIA DGX A100 80GB (8 GPUs/node)": "a100-80gb",
    "A800": "a800-80gb",
    "A800 80GB": "a800-80gb",
    "NVIDIA A800-SXM4-80GB": "a800-80gb",
    "NVIDIA A800 (128 nodes x 8 GPUs)": "a800-80gb",
    "H100 SXM": "h100-sxm",
    "H100 SXM5": "h100-sxm",
    "H100-SXM5-80GB": "h100-sxm",
    "NVIDIA H100-SXM5-80GB": "h100-sxm",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "H100 80GB": "h100-sxm",
    "DGX-H100": "h100-sxm",
    "HGX H100": "h100-sxm",
    "NVIDIA H100 (Eos)": "h100-sxm",
    "H100 PCIe": "h100-pcie",
    "NVIDIA H100 PCIe": "h100-pcie",
    "H800": "h800",
    "NVIDIA H800": "h800",
    "H800 SXM5 80GB": "h800",
    "H200": "h200",
    "H200 SXM": "h200",
    "H200-SXM5-141GB": "h200",
    "NVIDIA H200-SXM5-141GB": "h200",
    "H200-SXM-141GB": "h200",
    "NVIDIA H200 141GB HBM3e": "h200",
    "HGX H200": "h200",
    "GH200": "gh200",
    "NVIDIA GH200 480GB": "gh200",
    "GH200 Grace Hopper Superchip": "gh200",
    "B200": "b200",
    "DGX-B200": "b200",
    "HGX B200": "b200",
    "NVIDIA B200": "b200",
    "B300": "b300",
    "DGX-B300": "b300",
    "NVIDIA B300": "b300",
    "GB200": "gb200",
    "DGX-GB200": "gb200",
    "GB200 NVL72": "gb200",
    "NVIDIA GB200": "gb200",
    "GB300": "gb300",
    "DGX-GB300": "gb300",
    "GB300 NVL72": "gb300",
    "V100 32GB": "v100-32gb",
    "V100-SXM2-32GB": "v100-32gb",
    "Tesla V100-SXM2-32GB": "v100-32gb",
    "MI250": "mi250",
    "AMD Instinct MI250": "mi250",
    "MI250X": "mi250x",
    "AMD Instinct MI250X": "mi250x",
    "MI300X": "mi300x",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI300X 192GB": "mi300x",
    "MI300X 192GB": "mi300x",
    "MI355X": "mi355x",
    "AMD Instinct MI355X": "mi355x",
    "Gaudi2": "gaudi2",
    "Gaudi 2": "gaudi2",
    "Intel Gaudi2": "gaudi2",
    "Habana Gaudi2": "gaudi2",
    "HL-225": "gaudi2",
    "HL-225H": "gaudi2",
    "HPU": "gaudi2",
    "Intel Habana Gaudi2 (HLS-2 servers, 8 HL-225H each)": "gaudi2",
    "Gaudi3": "gaudi3",
    "Gaudi 3": "gaudi3",
    "Intel Gaudi3": "gaudi3",
    "HL-325L": "gaudi3",
    "CS-2": "cs-2",
    "Cerebras CS-2": "cs-2",
    "WSE-2": "cs-2",
    "SN30": "sn30",
    "SambaNova SN30": "sn30",
    "SambaNova SN30 RDU": "sn30",
    "SambaNova SN30 (8 RDUs per node)": "sn30",
    "Bow IPU": "bow-ipu",
    "Graphcore Bow IPU": "bow-ipu",
    "Bow Pod64": "bow-ipu",
    "Graphcore Bow Pod64 (64 Bow IPUs)": "bow-ipu",
    "Bow-2000": "bow-ipu",
    "TPU v4": "tpu-v4",
    "TPU-v4": "tpu-v4",
    "TPU v5e": "tpu-v5e",
    "TPU v5 lite": "tpu-v5e",
    "TPU v5p": "tpu-v5p",
    "cloud-tpu-v5p": "tpu-v5p",
}

# A name that leaves something unstated resolves to a default, with a note saying so.
ACCELERATOR_DEFAULTS: dict[str, tuple[str, str]] = {
    "A100": ("a100-80gb", "A100 memory size not stated; resolved to a100-80gb (40GB has the same peak FLOPS)"),
    "NVIDIA A100 (memory size not stated)": (
        "a100-80gb",
        "A100 memory size not stated; resolved to a100-80gb (40GB has the same peak FLOPS)",
    ),
    "A100 SXM4": ("a100-80gb", "A100 memory size not stated; resolved to a100-80gb (40GB has the same peak FLOPS)"),
    "DGX A100": ("a100-80gb", "DGX A100 shipped with 40GB or 80GB A100s; resolved to a100-80gb (same peak FLOPS)"),
    "H100": ("h100-sxm", "H100 form factor not stated; resolved to h100-sxm (H100 PCIe has lower peaks)"),
    "NVIDIA H100 96GB HBM2e (Grand Teton, 500 W)": (
        "h100-sxm",
        "H100 96GB HBM2e part at 500 W; h100-sxm peaks used, so MFU against them understates it",
    ),
    "H100 96GB": (
        "h100-sxm",
        "H100 96GB HBM2e part; h100-sxm peaks used, so MFU against them understates it",
    ),
}

MODEL_ALIASES: dict[str, str] = {
    "Llama 2 7B": "llama2-7b",
    "LLAMA2-7B": "llama2-7b",
    "meta-llama/Llama-2-7b-hf": "llama2-7b",
    "Llama 2 13B": "llama2-13b",
    "LLAMA2-13B": "llama2-13b",
    "meta-llama/Llama-2-13b-hf": "llama2-13b",
    "Llama 2 70B": "llama2-70b",
    "LLAMA2-70B": "llama2-70b",
    "meta-llama/Llama-2-70b-hf": "llama2-70b",
    "llama2_70b_lora": "llama2-70b",
    "Llama 3 8B": "llama3-8b",
    "LLAMA3-8B": "llama3-8b",
    "LLAMA3_8B": "llama3-8b",
    "Llama 3.1 8B": "llama3-8b",
    "llama31_8b": "llama3-8b",
    "meta-llama/Meta-Llama-3-8B": "llama3-8b",
    "meta-llama/Llama-3.1-8B": "llama3-8b",
    "Llama 3 70B": "llama3-70b",
    "LLAMA3-70B": "llama3-70b",
    "LLAMA3_70B": "llama3-70b",
    "Llama 3.1 70B": "llama3-70b",
    "meta-llama/Meta-Llama-3-70B": "llama3-70b",
    "Llama 3.1 405B": "llama3-405b",
    "LLAMA3-405B": "llama3-405b",
    "LLAMA3.1-405B": "llama3-405b",
    "LLAMA3.1_405B": "llama3-405b",
    "llama31_405b": "llama3-405b",
    "meta-llama/Llama-3.1-405B": "llama3-405b",
    "LLAMA4-Scout-LLM": "llama4-scout",
    "Llama 4 Scout": "llama4-scout",
    "Llama-4-Scout-17B-16E": "llama4-scout",
    "GPT-3 126M": "gpt3-126m",
    "GPT-3 125M": "gpt3-126m",
    "GPT3-126M": "gpt3-126m",
    "gpt3-0.125B": "gpt3-126m",
    "GPT-2B": "gpt3-2b",
    "GPT-2B-001": "gpt3-2b",
    "nvidia/GPT-2B-001": "gpt3-2b",
    "GPT-3 5B": "gpt3-5b",
    "GPT3-5B": "gpt3-5b",
    "GPT-3 6.7B": "gpt3-6.7b",
    "GPT3-6.7B": "gpt3-6.7b",
    "GPT-20B": "gpt3-20b",
    "GPT3-20B": "gpt3-20b",
    "GPT-3 20B": "gpt3-20b",
    "GPT-3 30B": "gpt3-30b",
    "GPT-3 175B": "gpt3-175b",
    "GPT3-175B": "gpt3-175b",
    "GPT 175B": "gpt3-175b",
    "gpt3": "gpt3-175b",
    "GPT-3 175B (MLPerf benchmark)": "gpt3-175b",
    "GPT-2 XL": "gpt2-xl",
    "gpt2-xl": "gpt2-xl",
    "GPT-2 1.5B": "gpt2-xl",
    "Mixtral-8x7B": "mixtral-8x7b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Mixtral-8x22B": "mixtral-8x22b",
    "mistralai/Mixtral-8x22B-v0.1": "mixtral-8x22b",
    "Nemotron-8B": "nemotron-8b",
    "Nemotron-15B": "nemotron-15b",
    "Nemotron-4 15B": "nemotron-15b",
    "Nemotron-22B": "nemotron-22b",
    "Nemotron-340B": "nemotron-340b",
    "Nemotron-4 340B": "nemotron-340b",
    "Nemotron_3_Nano": "nemotron3-nano",
    "Nemotron 3 Nano": "nemotron3-nano",
    "Nemotron_3_Super": "nemotron3-super",
    "Nemotron 3 Super": "nemotron3-super",
    "Nemotron_3_Ultra": "nemotron3-ultra",
    "Nemotron 3 Ultra": "nemotron3-ultra",
    "Nemotron_3_5_Lightning": "nemotron3.5-lightning",
    "Qwen2.5 32B": "qwen2.5-32b",
    "Qwen/Qwen2.5-32B": "qwen2.5-32b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen3 30B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "DeepSeekV3": "deepseek-v3",
    "DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "DeepSeekV4 Flash": "deepseek-v4-flash",
    "Kimi_K2": "kimi-k2",
    "Kimi K2": "kimi-k2",
    "moonshotai/Kimi-K2-Base": "kimi-k2",
    "GPT OSS 120B": "gpt-oss-120b",
    "gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "GenSLM 1.5B": "genslm-1.5b",
    "GenSLM 13B": "genslm-13b",
    "GPT 1.7B (hidden 2304, layers 24, vocab 51200)": "megatron-gpt-1.7b",
    "GPT 3.6B (hidden 3072, layers 30, vocab 51200)": "megatron-gpt-3.6b",
    "GPT 7.5B (hidden 4096, layers 36, vocab 51200)": "megatron-gpt-7.5b",
    "GPT 18B (hidden 6144, layers 40, vocab 51200)": "megatron-gpt-18b",
    "GPT 22B": "megatron-gpt-22b",
    "GPT 39B (hidden 8192, layers 48, vocab 51200)": "megatron-gpt-39b",
    "GPT 76B (hidden 10240, layers 60, vocab 51200)": "megatron-gpt-76b",
    "GPT 145B (hidden 12288, layers 80, vocab 51200)": "megatron-gpt-145b",
    "GPT 310B (hidden 16384, layers 96, vocab 51200)": "megatron-gpt-310b",
    "GPT 530B (hidden 20480, layers 105, vocab 51200)": "megatron-gpt-530b",
    "GPT 530B": "megatron-gpt-530b",
    "MT-NLG 530B": "megatron-gpt-530b",
    "GPT 1T (hidden 25600, layers 128, vocab 51200)": "megatron-gpt-1t",
    "GPT 1T": "megatron-gpt-1t",
    "GPT 1.7B (heads 16, hidden 2048, layers 24, vocab 131072)": "mcore-gpt-1.7b",
    "GPT 7.1B (heads 32, hidden 4096, layers 30, vocab 131072)": "mcore-gpt-7.1b",
    "GPT 16B (heads 48, hidden 6144, layers 32, vocab 131072)": "mcore-gpt-16b",
    "GPT 32B (heads 56, hidden 7168, layers 48, vocab 131072)": "mcore-gpt-32b",
    "GPT 70B (heads 64, hidden 8192, layers 84, vocab 131072)": "mcore-gpt-70b",
    "GPT 119B (heads 80, hidden 10240, layers 92, vocab 131072)": "mcore-gpt-119b",
    "GPT 177B (heads 96, hidden 12288, layers 96, vocab 131072)": "mcore-gpt-177b",
    "GPT-3 175B-class (177B, vocab 131072)": "mcore-gpt-177b",
    "GPT 314B (heads 128, hidden 16384, layers 96, vocab 131072)": "mcore-gpt-314b",
    "GPT 462B (heads 144, hidden 18432, layers 112, vocab 131072)": "mcore-gpt-462b",
}

PRECISION_ALIASES: dict[str, Precision] = {
    "fp32": Precision.FP32,
    "float32": Precision.FP32,
    "tf32": Precision.TF32,
    "fp16": Precision.FP16,
    "float16": Precision.FP16,
    "half": Precision.FP16,
    "halfprecision": Precision.FP16,
    "halfprecisionmixed": Precision.FP16,
    "amp": Precision.FP16,
    "bf16": Precision.BF16,
    "bfloat16": Precision.BF16,
    "nonebfloat16": Precision.BF16,
    "ampbf16": Precision.BF16,
    "fp8": Precision.FP8,
    "fp8cs": Precision.FP8,
    "fp8mx": Precision.FP8,
    "mxfp8": Precision.FP8,
    "fp8ds": Precision.FP8,
    "fp8pertensorcurrentscaling": Precision.FP8,
    "float8": Precision.FP8,
    "float8tensorwise": Precision.FP8,
    "float8rowwise": Precision.FP8,
    "float8linearsfsdpfloat8allgatherbf16": Precision.FP8,
    "nvfp4": Precision.FP4,
    "fp4": Precision.FP4,
    "mxfp4": Precision.FP4,
    "": Precision.UNSTATED,
    "unstated": Precision.UNSTATED,
    "notstated": Precision.UNSTATED,
    "none": Precision.UNSTATED,
    "unknown": Precision.UNSTATED,
}

# Words that name a vendor, a system or a form factor rather than the accelerator itself.
_NOISE_WORDS = frozenset(
    "nvidia amd intel habana google cloud cerebras sambanova graphcore instinct tesla tensor core "
    "gpu gpus sxm sxm2 sxm4 sxm5 oam hbm2 hbm2e hbm3 hbm3e the meta hf chat base".split()
)
_PAREN = re.compile(r"\([^)]*\)")
_WORD = re.compile(r"[a-z0-9]+")


def normalize_name(name: str) -> str:
    """Lower case, letters and digits only: "NVIDIA A100-SXM4-80GB" -> "nvidiaa100sxm480gb"."""
    return "".join(_WORD.findall(name.lower()))


def _without_parens(name: str) -> str:
    return _PAREN.sub(" ", name)


def _without_noise(name: str) -> str:
    words = _WORD.findall(_without_parens(name.split("/")[-1]).lower())
    return "".join(w for w in words if w not in _NOISE_WORDS)


def _keys(name: str) -> tuple[str, ...]:
    """The lookup keys of a name, most specific first."""
    return (normalize_name(name), normalize_name(_without_parens(name)), _without_noise(name))


def _table(ids: tuple[str, ...], aliases: dict[str, str]) -> dict[str, str]:
    table: dict[str, str] = {}
    for canonical in ids:
        for key in _keys(canonical):
            table.setdefault(key, canonical)
    for alias, canonical in aliases.items():
        for key in _keys(alias):
            table.setdefault(key, canonical)
    return table


_ACCELERATOR_TABLE = _table(ACCELERATOR_IDS, ACCELERATOR_ALIASES)
_ACCELERATOR_DEFAULT_TABLE: dict[str, tuple[str, str]] = {
    key: target for alias, target in ACCELERATOR_DEFAULTS.items() for key in _keys(alias)
}
_MODEL_TABLE = _table(MODEL_IDS, MODEL_ALIASES)


def _nearest(name: str, ids: tuple[str, ...]) -> tuple[str, ...]:
    key = normalize_name(name)
    by_key = {normalize_name(i): i for i in ids}
    close = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.0)
    return tuple(by_key[k] for k in close)


def _lookup(name: str, table: dict[str, str]) -> str | None:
    for key in _keys(name):
        if key and key in table:
            return table[key]
    return None


def resolve_accelerator_noted(name: str) -> tuple[str, str | None]:
    """Canonical accelerator id for a name as printed, and a note when a default filled a gap.

    >>> resolve_accelerator_noted("NVIDIA A100-SXM4-80GB")
    ('a100-80gb', None)
    >>> resolve_accelerator_noted("A100")[0]
    'a100-80gb'
    """
    found = _lookup(name, _ACCELERATOR_TABLE)
    if found is not None:
        return found, None
    for key in _keys(name):
        if key in _ACCELERATOR_DEFAULT_TABLE:
            return _ACCELERATOR_DEFAULT_TABLE[key]
    raise UnknownId("accelerator", name, _nearest(name, ACCELERATOR_IDS))


def resolve_accelerator(name: str) -> str:
    """Canonical accelerator id: "NVIDIA H100 80GB HBM3" -> "h100-sxm"; unknown names raise UnknownId."""
    return resolve_accelerator_noted(name)[0]


def resolve_model(name: str) -> str:
    """Canonical model id: "meta-llama/Llama-2-70b-hf" -> "llama2-70b"; unknown names raise UnknownId."""
    found = _lookup(name, _MODEL_TABLE)
    if found is None:
        raise UnknownId("model", name, _nearest(name, MODEL_IDS))
    return found


def normalize_precision(text: str | None) -> str:
    """A Precision value for a precision as printed: "BF16" -> "bf16", "FP8-CS" -> "fp8", "" -> "unstated".

    Anything starting with "not stated" is unstated; an unrecognized text is also unstated (the caller keeps
    the printed text in a note).
    """
    key = normalize_name(_without_parens(text or ""))
    if key.startswith("notstated"):
        return Precision.UNSTATED.value
    full = normalize_name(text or "")
    for candidate in (full, key):
        if candidate in PRECISION_ALIASES:
            return PRECISION_ALIASES[candidate].value
    return Precision.UNSTATED.value
