"""Maintenance script: regenerate data/{sources,accelerators,models,results}.csv from the curated facts.

    .venv/bin/python data/build_from_facts.py [FACTS_DIR]     (default /work/shared/facts)

This is the ONLY code in the repository that reads /work/shared. It is never run by the tests or by the app:
they read the CSVs it wrote, which are committed. Run it by hand when the facts change, then review the diff.

What it does to each facts row (923 rows, none dropped): resolves the accelerator and model to canonical ids
(perfledger.catalog) while keeping the printed text; normalizes precision to a Precision value (the printed
text goes to `note` when it carried more); splits "TP=4;PP=8;CP=1;VP=6" into tp/pp/cp/ep/dp/grad_accum
(VP and free text go to `note`); fills `strategy` where the source states one; maps workloads onto the
Workload vocabulary; converts units into Metric.unit; copies "Baseline: ..." from the notes into `baseline`;
and keeps the facts' evidence wording, the value as published and the notes in `note`.
The model table (shapes) is written from MODELS below, each row citing its source.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfledger.catalog import (
    normalize_name,
    normalize_precision,
    resolve_accelerator_noted,
    resolve_model,
)
from perfledger.errors import UnknownId
from perfledger.vocabulary import Evidence, Metric, SourceKind, Workload

DATA = Path(__file__).resolve().parent
SOURCE_COLUMNS = ("id", "kind", "title", "publisher", "date", "url", "evidence", "note")
ACCELERATOR_COLUMNS = (
    "id", "vendor", "name", "form", "memory_gb", "mem_bw_tbps", "fp32_tflops", "tf32_tflops", "fp16_tflops",
    "bf16_tflops", "fp8_tflops", "tdp_w", "unit_basis", "devices_per_package", "interconnect", "source_id",
    "evidence", "note",
)
MODEL_COLUMNS = (
    "id", "family", "name", "params", "active_params", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
    "vocab", "ffn_kind", "moe_experts", "moe_top_k", "seq_len", "tied_embeddings", "source_id", "note",
)
RESULT_COLUMNS = (
    "source_id", "accelerator_id", "accelerator_as_printed", "n_devices", "framework", "framework_version",
    "model_id", "model_as_printed", "workload", "precision", "seq_len", "global_batch", "micro_batch",
    "grad_accum", "tp", "pp", "dp", "ep", "cp", "strategy", "sparsity", "metric", "value", "unit", "evidence",
    "locator", "note", "baseline",
)

# --- sources -------------------------------------------------------------------------------------------------

CONFIG_SOURCES: tuple[dict[str, str], ...] = (
    {"id": "nemo_llm_configs", "kind": "docs", "title": "NeMo model configs (Llama2Config7B/13B/70B, Llama3Config8B/70B, "
     "Llama31Config405B in llama.py; MixtralConfig8x7B in mixtral.py; GPTConfig5B/20B/175B in base.py)",
     "publisher": "NVIDIA (GitHub NVIDIA/NeMo)", "date": "commit 8cfedd7203462cb251a914e700e5605444277561",
     "url": "https://github.com/NVIDIA/NeMo/tree/8cfedd7203462cb251a914e700e5605444277561/nemo/collections/llm/gpt/model",
     "evidence": "primary (framework config), per reference/formulas.md section 2", "note": ""},
    {"id": "llama_models_sku_list", "kind": "docs", "title": "meta-llama/llama-models models/sku_list.py (VOCAB_SIZE 128256 for Llama 3)",
     "publisher": "Meta (GitHub meta-llama/llama-models)", "date": "commit 084b88e939e954d2851ee28f96398ca54aa8f8f9",
     "url": "https://github.com/meta-llama/llama-models/blob/084b88e939e954d2851ee28f96398ca54aa8f8f9/models/sku_list.py",
     "evidence": "primary (vendor code); its Llama 2 entries are wrong (copied from Llama 3) and are not used", "note": ""},
    {"id": "hf_mixtral_8x7b_config", "kind": "docs", "title": "mistralai/Mixtral-8x7B-Instruct-v0.1 config.json",
     "publisher": "Mistral AI (Hugging Face)", "date": "revision eba92302a2861cdc0098cc54bc9f17cb2c47eb61",
     "url": "https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/eba92302a2861cdc0098cc54bc9f17cb2c47eb61/config.json",
     "evidence": "primary (model config)", "note": ""},
    {"id": "nanogpt_model_py", "kind": "docs", "title": "nanoGPT model.py from_pretrained (GPT-2 XL: 48 layers, 25 heads, 1600 hidden)",
     "publisher": "karpathy/nanoGPT (GitHub)", "date": "commit 3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
     "url": "https://github.com/karpathy/nanoGPT/blob/3adf61e154c3fe3fca428ad6bc3818b27a3b8291/model.py",
     "evidence": "primary (code)", "note": ""},
    {"id": "megatron_paper_2104_04473", "kind": "paper", "title": "Efficient Large-Scale Language Model Training on GPU Clusters "
     "Using Megatron-LM (arXiv 2104.04473), Table 1", "publisher": "Narayanan et al. (NVIDIA)", "date": "2021-04",
     "url": "https://arxiv.org/abs/2104.04473", "evidence": "paper table; shapes also printed in the facts' model names",
     "note": "heads per size recalled from the paper's Table 1 (not re-read here): unverified"},
    {"id": "megatron_paper_2205_05198", "kind": "paper", "title": "Reducing Activation Recomputation in Large Transformer Models "
     "(arXiv 2205.05198), Table 3", "publisher": "Korthikanti et al. (NVIDIA)", "date": "2022-05",
     "url": "https://arxiv.org/abs/2205.05198", "evidence": "paper table", "note": "shapes recalled, not re-read here: unverified"},
    {"id": "gpt3_paper", "kind": "paper", "title": "Language Models are Few-Shot Learners (arXiv 2005.14165), Table 2.1",
     "publisher": "Brown et al. (OpenAI)", "date": "2020-05", "url": "https://arxiv.org/abs/2005.14165",
     "evidence": "paper table", "note": "shapes recalled, PDF not opened here: unverified"},
    {"id": "hf_model_configs", "kind": "docs", "title": "Hugging Face config.json files of the open-weight models "
     "(Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B, Qwen/Qwen2.5-32B, deepseek-ai/DeepSeek-V3, moonshotai/Kimi-K2-Base, "
     "openai/gpt-oss-120b, meta-llama/Llama-4-Scout-17B-16E, mistralai/Mixtral-8x22B-v0.1, nvidia/GPT-2B-001)",
     "publisher": "model publishers on Hugging Face", "date": "", "url": "https://huggingface.co/",
     "evidence": "values recalled from the published config files; not opened in this repository's sources: unverified",
     "note": "check each shape against the config.json before relying on FLOPs for these models"},
    {"id": "nemotron4_papers", "kind": "paper", "title": "Nemotron-4 15B Technical Report (arXiv 2402.16819); "
     "Nemotron-4 340B Technical Report (arXiv 2406.11704)", "publisher": "NVIDIA", "date": "2024",
     "url": "https://arxiv.org/abs/2402.16819 ; https://arxiv.org/abs/2406.11704",
     "evidence": "paper tables; values recalled, not re-read here: unverified", "note": ""},
)

_KIND_RULES: tuple[tuple[str, SourceKind], ...] = (
    ("vendor blog", SourceKind.VENDOR),
    ("vendor docs", SourceKind.DOCS),
    ("paper", SourceKind.PAPER),
    ("press", SourceKind.PRESS),
    ("talk", SourceKind.TALK),
    ("mlperf", SourceKind.MLPERF),
)


def source_kind(text: str) -> str:
    """Facts' free-text kind -> SourceKind: READMEs, docs, code and compilations are all "docs"."""
    lowered = text.lower()
    for prefix, kind in _KIND_RULES:
        if lowered.startswith(prefix):
            return kind.value
    return SourceKind.DOCS.value


def build_sources(facts: Path) -> list[dict[str, Any]]:
    rows = [
        {"id": r["source_id"], "kind": source_kind(r["kind"]), "title": r["title"], "publisher": r["publisher"],
         "date": r["date"], "url": r["url"], "evidence": r["kind"], "note": ""}
        for r in read_csv(facts / "sources.csv")
    ]
    return rows + [dict(r) for r in CONFIG_SOURCES]


# --- accelerators --------------------------------------------------------------------------------------------

FACTS_ACCELERATOR_IDS: dict[str, str] = {
    "NVIDIA A100 SXM4 40GB": "a100-40gb",
    "NVIDIA A100 SXM4 80GB": "a100-80gb",
    "NVIDIA A800 SXM4 (40GB/80GB)": "a800-80gb",
    "NVIDIA H100 SXM5 80GB": "h100-sxm",
    "NVIDIA H800 SXM5 80GB": "h800",
    "NVIDIA H200 SXM 141GB": "h200",
    "NVIDIA B200 (HGX/DGX, SXM)": "b200",
    "NVIDIA GB200 (per Blackwell GPU in NVL72)": "gb200",
    "AMD Instinct MI250 (OAM)": "mi250",
    "AMD Instinct MI250X (OAM)": "mi250x",
    "AMD Instinct MI300X (OAM)": "mi300x",
    "Intel Habana Gaudi2 (HL-225)": "gaudi2",
    "Intel Gaudi3 (HL-325L OAM)": "gaudi3",
    "Cerebras CS-2 (WSE-2)": "cs-2",
    "SambaNova SN30 RDU (DataScale SN30)": "sn30",
    "Graphcore Bow IPU (Bow-2000 / Bow-Pod64)": "bow-ipu",
    "Google TPU v4": "tpu-v4",
    "Google TPU v5e": "tpu-v5e",
    "Google TPU v5p": "tpu-v5p",
}

_BASIS_RULES: tuple[tuple[str, str], ...] = (
    ("per gpu", "GPU"), ("per package", "package"), ("per chip", "chip"), ("per cs-2 system", "system"),
    ("per rdu", "RDU"), ("per ipu", "IPU"),
)

# Accelerators the facts lack but results or logs need. Peaks only where reference/formulas.md justifies them.
EXTRA_ACCELERATORS: tuple[dict[str, Any], ...] = (
    {"id": "h100-pcie", "vendor": "NVIDIA", "name": "NVIDIA H100 PCIe 80GB", "form": "PCIe", "memory_gb": 80,
     "fp16_tflops": 756, "bf16_tflops": 756, "fp8_tflops": 1513, "tf32_tflops": 378, "unit_basis": "GPU",
     "devices_per_package": 1, "source_id": "mlengineering_accel",
     "evidence": "secondary (reference/formulas.md section 4: ml-engineering table; torchtitan 756e12)",
     "note": "Dense peaks from reference/formulas.md section 4. Memory bandwidth and TDP not in stored sources: blank."},
    {"id": "gh200", "vendor": "NVIDIA", "name": "NVIDIA GH200 Grace Hopper (per Hopper GPU)", "form": "superchip",
     "unit_basis": "GPU", "devices_per_package": 1, "source_id": "",
     "evidence": "no stored source", "note": "Needed by the CSCS GH200 Megatron logs. Hopper GPU, but no stored "
     "source gives its peaks or memory; left blank so no MFU is computed against a guessed peak."},
    {"id": "b300", "vendor": "NVIDIA", "name": "NVIDIA B300 (Blackwell Ultra, DGX B300)", "form": "SXM",
     "unit_basis": "GPU", "devices_per_package": 1, "source_id": "", "evidence": "no stored source",
     "note": "Needed by Megatron-Bridge DGX-B300 rows; facts/accelerators.csv has no B300 row. Peaks blank."},
    {"id": "gb300", "vendor": "NVIDIA", "name": "NVIDIA GB300 (per Blackwell Ultra GPU in NVL72)",
     "form": "GB300 superchip", "unit_basis": "GPU", "devices_per_package": 1, "source_id": "",
     "evidence": "no stored source",
     "note": "Needed by Megatron-Bridge DGX-GB300 rows; facts/accelerators.csv has no GB300 row. Peaks blank."},
    {"id": "v100-32gb", "vendor": "NVIDIA", "name": "NVIDIA V100 SXM2 32GB", "form": "SXM2", "memory_gb": 32,
     "unit_basis": "GPU", "devices_per_package": 1, "source_id": "", "evidence": "no stored source",
     "note": "Needed by the BigScience V100 logs. No stored source gives its peaks; left blank."},
    {"id": "mi355x", "vendor": "AMD", "name": "AMD Instinct MI355X", "form": "OAM", "unit_basis": "GPU",
     "devices_per_package": 1, "source_id": "", "evidence": "no stored source",
     "note": "Needed by the MLPerf v5.1 and Primus MI355X logs. No stored source gives its peaks; left blank."},
)


def unit_basis(text: str) -> str:
    lowered = text.lower()
    for prefix, basis in _BASIS_RULES:
        if lowered.startswith(prefix):
            return basis
    raise ValueError(f"unknown unit_basis text {text!r}")


def build_accelerators(facts: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for r in read_csv(facts / "accelerators.csv"):
        acc_id = FACTS_ACCELERATOR_IDS[r["name"]]
        source_ids = r["source_ids"].split(";")
        note = join_notes(
            r["notes"],
            f"unit basis as published: {r['unit_basis']}",
            f"FLOPS basis: {r['flops_basis']}",
            f"other sources: {', '.join(source_ids[1:])}" if len(source_ids) > 1 else "",
            f"urls: {r['source_url']}",
        )
        rows.append({
            "id": acc_id, "vendor": r["vendor"], "name": r["name"], "form": r["form"],
            "memory_gb": r["memory_gb"], "mem_bw_tbps": r["mem_bw_tbps"], "fp32_tflops": r["fp32_tflops"],
            "tf32_tflops": r["tf32_tflops"], "fp16_tflops": r["fp16_tflops"], "bf16_tflops": r["bf16_tflops"],
            "fp8_tflops": r["fp8_tflops"], "tdp_w": r["tdp_w"], "unit_basis": unit_basis(r["unit_basis"]),
            "devices_per_package": 2 if acc_id in ("mi250", "mi250x") else 1, "interconnect": r["interconnect"],
            "source_id": source_ids[0], "evidence": r["evidence"], "note": note,
        })
    rows += [dict(r) for r in EXTRA_ACCELERATORS]
    return rows


# --- models --------------------------------------------------------------------------------------------------

def _m(mid: str, family: str, name: str, **kw: Any) -> dict[str, Any]:
    return {"id": mid, "family": family, "name": name, **kw}


_GELU = {"ffn_kind": "gelu", "tied_embeddings": True}
_MEGATRON_2021 = "megatron_paper_2104_04473"
_MCORE_NOTE = ("Megatron-Core r0.8.0 weak-scaling table (megatron_readme_h100_2024): heads, hidden, layers and "
               "vocab as printed; FFN size, activation and tying not stated, so FFN columns are blank")

MODELS: tuple[dict[str, Any], ...] = (
    _m("llama2-7b", "llama2", "Llama 2 7B", params=6738415616, layers=32, hidden=4096, heads=32, kv_heads=32,
       ffn_hidden=11008, vocab=32000, ffn_kind="swiglu", seq_len=4096, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama2Config7B; HF copies of meta-llama/Llama-2-7b-hf agree"),
    _m("llama2-13b", "llama2", "Llama 2 13B", params=13015864320, layers=40, hidden=5120, heads=40, kv_heads=40,
       ffn_hidden=13824, vocab=32000, ffn_kind="swiglu", seq_len=4096, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama2Config13B"),
    _m("llama2-70b", "llama2", "Llama 2 70B", params=68976648192, layers=80, hidden=8192, heads=64, kv_heads=8,
       ffn_hidden=28672, vocab=32000, ffn_kind="swiglu", seq_len=4096, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama2Config70B; public copies of meta-llama/Llama-2-70b-hf config.json agree (80/8192/28672/64/8/32000)"),
    _m("llama3-8b", "llama3", "Llama 3 / 3.1 8B", params=8030261248, layers=32, hidden=4096, heads=32, kv_heads=8,
       ffn_hidden=14336, vocab=128256, ffn_kind="swiglu", seq_len=8192, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama3Config8B; Llama 3.1 8B has the same shapes (only RoPE scaling and max context differ); V from "
       "llama_models_sku_list"),
    _m("llama3-70b", "llama3", "Llama 3 / 3.1 70B", params=70553706496, layers=80, hidden=8192, heads=64, kv_heads=8,
       ffn_hidden=28672, vocab=128256, ffn_kind="swiglu", seq_len=8192, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama3Config70B; Llama 3.1 70B has the same shapes"),
    _m("llama3-405b", "llama3", "Llama 3.1 405B", params=405853388800, layers=126, hidden=16384, heads=128, kv_heads=8,
       ffn_hidden=53248, vocab=128256, ffn_kind="swiglu", seq_len=8192, tied_embeddings=False, source_id="nemo_llm_configs",
       note="Llama31Config405B; seq_length 131072 is the maximum context, 8192 used as the default"),
    _m("llama4-scout", "llama4", "Llama 4 Scout 17B-16E", params=109e9, active_params=17e9, layers=48, hidden=5120,
       heads=40, kv_heads=8, ffn_hidden=8192, vocab=202048, ffn_kind="swiglu", moe_experts=16, moe_top_k=1,
       tied_embeddings=False, source_id="hf_model_configs",
       note="MoE with a shared expert in every layer (not expressible here); chunked/NoPE attention layers; "
       "ffn_hidden is the expert size. Shapes unverified"),
    _m("gpt3-126m", "gpt3", "GPT-3 126M (Small)", params=125e6, layers=12, hidden=768, heads=12, kv_heads=12,
       ffn_hidden=3072, vocab=50257, seq_len=2048, source_id="gpt3_paper", **_GELU,
       note="GPT-3 Small (125M in the paper, NeMo calls it 126M); shapes unverified"),
    _m("gpt3-2b", "gpt3", "NeMo GPT-2B (GPT-2B-001)", params=2e9, layers=24, hidden=2048, heads=16, kv_heads=16,
       ffn_hidden=5440, vocab=256000, ffn_kind="swiglu", seq_len=4096, tied_embeddings=False, source_id="hf_model_configs",
       note="the NeMo blog's RLHF 'GPT-2B' is assumed to be nvidia/GPT-2B-001 (24 layers, 2048 hidden, SwiGLU, RoPE, "
       "256k vocab); the blog does not give the shape. Unverified"),
    _m("gpt3-5b", "gpt3", "NeMo GPT-3 5B", params=5.051e9, layers=24, hidden=4096, heads=32, kv_heads=32,
       ffn_hidden=16384, vocab=51200, seq_len=2048, source_id="nemo_llm_configs", **_GELU,
       note="GPTConfig5B; vocab 51200 as NeMo counts FLOPs"),
    _m("gpt3-6.7b", "gpt3", "GPT-3 6.7B", params=6.7e9, layers=32, hidden=4096, heads=32, kv_heads=32,
       ffn_hidden=16384, vocab=50257, seq_len=2048, source_id="gpt3_paper", **_GELU,
       note="GPT-3 paper Table 2.1 (6.7B: 32 layers, d_model 4096, 32 heads); the Cerebras variant in Emani et "
       "al. may differ. Unverified"),
    _m("gpt3-20b", "gpt3", "NeMo GPT-3 20B", params=20.262e9, layers=44, hidden=6144, heads=48, kv_heads=48,
       ffn_hidden=24576, vocab=51200, seq_len=2048, source_id="nemo_llm_configs", **_GELU, note="GPTConfig20B"),
    _m("gpt3-30b", "gpt3", "GPT-3 30B (Cerebras sparsity study)", params=30e9, source_id="emani2023_llm_accelerators",
       note="Emani et al. name a GPT-3 30B on CS-2 but give no shape; shape unknown, FLOPs cannot be computed"),
    _m("gpt3-175b", "gpt3", "GPT-3 175B", params=174.604e9, layers=96, hidden=12288, heads=96, kv_heads=96,
       ffn_hidden=49152, vocab=50257, seq_len=2048, source_id="nemo_llm_configs", **_GELU,
       note="GPTConfig175B; real vocab 50257, NeMo FLOPs use 51200 (+0.006%)"),
    _m("gpt2-xl", "gpt2", "GPT-2 XL", params=1557611200, layers=48, hidden=1600, heads=25, kv_heads=25,
       ffn_hidden=6400, vocab=50257, seq_len=1024, source_id="nanogpt_model_py", **_GELU, note="1558M params"),
    _m("mixtral-8x7b", "mixtral", "Mixtral 8x7B", params=46702792704, active_params=12879921152, layers=32,
       hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=32000, ffn_kind="swiglu", moe_experts=8,
       moe_top_k=2, seq_len=4096, tied_embeddings=False, source_id="nemo_llm_configs",
       note="MixtralConfig8x7B (NeMo seq 4096); HF config.json agrees, max_position_embeddings 32768"),
    _m("mixtral-8x22b", "mixtral", "Mixtral 8x22B", params=140.6e9, active_params=39.1e9, layers=56, hidden=6144,
       heads=48, kv_heads=8, ffn_hidden=16384, vocab=32768, ffn_kind="swiglu", moe_experts=8, moe_top_k=2,
       tied_embeddings=False, source_id="hf_model_configs", note="shapes unverified"),
    _m("nemotron-8b", "nemotron", "Nemotron-3 8B (NeMo Nemotron-8B)", params=8e9, layers=32, hidden=4096, heads=32,
       ffn_hidden=16384, vocab=256000, seq_len=4096, source_id="nemo_launcher_examples_202402",
       note="NeMo launcher benchmark model; shape recalled from NeMo's Nemotron3Config8B (squared-ReLU MLP, "
       "2 matrices): unverified; kv_heads and tying not sourced"),
    _m("nemotron-15b", "nemotron", "Nemotron-4 15B", params=15e9, layers=32, hidden=6144, heads=48, kv_heads=8,
       ffn_hidden=24576, vocab=256000, seq_len=4096, tied_embeddings=False, source_id="nemotron4_papers",
       note="squared-ReLU MLP with 2 matrices (ffn_kind left blank: neither gelu nor swiglu). Unverified"),
    _m("nemotron-22b", "nemotron", "Nemotron 22B (NeMo)", params=22e9, vocab=256000, seq_len=4096,
       source_id="nemo_launcher_examples_202402", note="shape not sourced; FLOPs cannot be computed"),
    _m("nemotron-340b", "nemotron", "Nemotron-4 340B", params=340e9, layers=96, hidden=18432, heads=96, kv_heads=8,
       ffn_hidden=73728, vocab=256000, seq_len=4096, tied_embeddings=False, source_id="nemotron4_papers",
       note="squared-ReLU MLP with 2 matrices (ffn_kind left blank). Unverified"),
    _m("nemotron3-nano", "nemotron3", "Nemotron 3 Nano", source_id="mbridge_perf_archive",
       note="hybrid Mamba-Transformer MoE; shape not sourced, FLOPs cannot be computed"),
    _m("nemotron3-super", "nemotron3", "Nemotron 3 Super", source_id="mbridge_perf_archive",
       note="hybrid Mamba-Transformer MoE; shape not sourced, FLOPs cannot be computed"),
    _m("nemotron3-ultra", "nemotron3", "Nemotron 3 Ultra", source_id="mbridge_perf_archive",
       note="shape not sourced, FLOPs cannot be computed"),
    _m("nemotron3.5-lightning", "nemotron3", "Nemotron 3.5 Lightning", source_id="mbridge_perf_archive",
       note="shape not sourced, FLOPs cannot be computed"),
    _m("qwen2.5-32b", "qwen2.5", "Qwen2.5 32B", params=32.8e9, layers=64, hidden=5120, heads=40, kv_heads=8,
       ffn_hidden=27648, vocab=152064, ffn_kind="swiglu", tied_embeddings=False, source_id="hf_model_configs",
       note="needed by the GCP B200 NeMo log; shapes unverified"),
    _m("qwen3-30b-a3b", "qwen3", "Qwen3 30B-A3B", params=30.5e9, active_params=3.3e9, layers=48, hidden=2048,
       heads=32, kv_heads=4, ffn_hidden=768, vocab=151936, ffn_kind="swiglu", moe_experts=128, moe_top_k=8,
       tied_embeddings=False, source_id="hf_model_configs",
       note="head_dim 128 (heads x head_dim = 4096, not hidden); ffn_hidden is the expert size. Unverified"),
    _m("qwen3-235b-a22b", "qwen3", "Qwen3 235B-A22B", params=235e9, active_params=22e9, layers=94, hidden=4096,
       heads=64, kv_heads=4, ffn_hidden=1536, vocab=151936, ffn_kind="swiglu", moe_experts=128, moe_top_k=8,
       tied_embeddings=False, source_id="hf_model_configs",
       note="head_dim 128; ffn_hidden is the expert size. Unverified"),
    _m("deepseek-v3", "deepseek", "DeepSeek-V3", params=671e9, active_params=37e9, layers=61, hidden=7168,
       heads=128, ffn_hidden=2048, vocab=129280, ffn_kind="swiglu", moe_experts=256, moe_top_k=8,
       tied_embeddings=False, source_id="hf_model_configs",
       note="MLA attention, 1 shared expert, first 3 layers dense (ffn 18432), MTP module: not expressible in these "
       "columns, so FLOPs from them are approximate; use active_params. Unverified"),
    _m("deepseek-v4-flash", "deepseek", "DeepSeek-V4 Flash", source_id="mbridge_perf_archive",
       note="shape not sourced, FLOPs cannot be computed"),
    _m("kimi-k2", "kimi", "Kimi K2", params=1.04e12, active_params=32e9, layers=61, hidden=7168, heads=64,
       ffn_hidden=2048, vocab=163840, ffn_kind="swiglu", moe_experts=384, moe_top_k=8, tied_embeddings=False,
       source_id="hf_model_configs",
       note="DeepSeek-V3-style MLA and shared expert, first layer dense: approximate. Unverified"),
    _m("gpt-oss-120b", "gpt-oss", "gpt-oss-120b", params=117e9, active_params=5.1e9, layers=36, hidden=2880, heads=64,
       kv_heads=8, ffn_hidden=2880, vocab=201088, ffn_kind="swiglu", moe_experts=128, moe_top_k=4,
       tied_embeddings=False, source_id="hf_model_configs",
       note="head_dim 64; alternating sliding-window attention. Unverified"),
    _m("genslm-1.5b", "genslm", "GenSLM 1.5B", params=1.5e9, source_id="emani2023_llm_accelerators",
       note="GPT-style genome model; shape not in the stored text"),
    _m("genslm-13b", "genslm", "GenSLM 13B", params=13e9, source_id="emani2023_llm_accelerators",
       note="GPT-style genome model; shape not in the stored text"),
) + tuple(
    _m(mid, "megatron-gpt", f"Megatron GPT {size}", params=params, layers=layers, hidden=hidden, heads=heads,
       kv_heads=heads, ffn_hidden=4 * hidden, vocab=51200, seq_len=2048, source_id=src, **_GELU,
       note="GPT with 4h GELU MLP; shape as printed in the facts' model name, heads from the paper")
    for mid, size, params, layers, hidden, heads, src in (
        ("megatron-gpt-1.7b", "1.7B", 1.7e9, 24, 2304, 24, _MEGATRON_2021),
        ("megatron-gpt-3.6b", "3.6B", 3.6e9, 30, 3072, 32, _MEGATRON_2021),
        ("megatron-gpt-7.5b", "7.5B", 7.5e9, 36, 4096, 32, _MEGATRON_2021),
        ("megatron-gpt-18b", "18B", 18.4e9, 40, 6144, 48, _MEGATRON_2021),
        ("megatron-gpt-22b", "22B", 22e9, 48, 6144, 64, "megatron_paper_2205_05198"),
        ("megatron-gpt-39b", "39B", 39.1e9, 48, 8192, 64, _MEGATRON_2021),
        ("megatron-gpt-76b", "76B", 76.1e9, 60, 10240, 80, _MEGATRON_2021),
        ("megatron-gpt-145b", "145B", 145.6e9, 80, 12288, 96, _MEGATRON_2021),
        ("megatron-gpt-310b", "310B", 310.1e9, 96, 16384, 128, _MEGATRON_2021),
        ("megatron-gpt-530b", "530B", 529.6e9, 105, 20480, 128, _MEGATRON_2021),
        ("megatron-gpt-1t", "1T", 1008e9, 128, 25600, 160, _MEGATRON_2021),
    )
) + tuple(
    _m(mid, "mcore-gpt", f"Megatron-Core GPT {size}", params=params, layers=layers, hidden=hidden, heads=heads,
       vocab=131072, seq_len=4096, source_id="megatron_readme_h100_2024", note=_MCORE_NOTE)
    for mid, size, params, layers, hidden, heads in (
        ("mcore-gpt-1.7b", "1.7B", 1.7e9, 24, 2048, 16),
        ("mcore-gpt-7.1b", "7.1B", 7.1e9, 30, 4096, 32),
        ("mcore-gpt-16b", "16B", 16e9, 32, 6144, 48),
        ("mcore-gpt-32b", "32B", 32e9, 48, 7168, 56),
        ("mcore-gpt-70b", "70B", 70e9, 84, 8192, 64),
        ("mcore-gpt-119b", "119B", 119e9, 92, 10240, 80),
        ("mcore-gpt-177b", "177B", 177e9, 96, 12288, 96),
        ("mcore-gpt-314b", "314B", 314e9, 96, 16384, 128),
        ("mcore-gpt-462b", "462B", 462e9, 112, 18432, 144),
    )
)


# --- results -------------------------------------------------------------------------------------------------

_PAIR = re.compile(r"\b(TP|PP|CP|EP|DP|FSDP|VP|GA)=(\d+|n/a)", re.IGNORECASE)
_LOCAL_BATCH = re.compile(r"local batch (\d+)")
_GAS = re.compile(r"GAS (\d+) vs GAS \d+")
_SPARSITY = re.compile(r"sparsity s=(\d+(?:\.\d+)?)")
_BASELINE = re.compile(r"Baseline:\s*(.+?)(?:;\s|\.\s|\.$|$)")
_UNIT_FIXES: dict[str, tuple[float, str]] = {  # facts unit -> (factor into Metric.unit, note)
    "days (NVIDIA estimate)": (1.0, "NVIDIA estimate"),
    "minutes (NVIDIA estimate)": (1.0, "NVIDIA estimate"),
    "petaFLOP/s total": (1.0, ""),
    "% of theoretical peak FLOPs": (1.0, "% of theoretical peak FLOPs"),
    "GPUs": (1.0, ""),
}
_WORKLOADS: dict[str, Workload] = {
    "pretrain": Workload.PRETRAIN,
    "sft": Workload.SFT,
    "lora_finetune": Workload.LORA_FINETUNE,
    "rlhf": Workload.RLHF,
    "pretrain and SFT": Workload.PRETRAIN,
    "optimizer step": Workload.MICROBENCH,
}


def parse_parallelism(text: str, n_devices: int | None) -> dict[str, Any]:
    """"FSDP=0;TP=4;PP=8;CP=1;VP=6;EP=n/a;GA=8" -> tp/pp/cp/ep/dp/grad_accum/strategy, plus what to note."""
    pairs = {k.upper(): (None if v.lower() == "n/a" else int(v)) for k, v in _PAIR.findall(text)}
    out: dict[str, Any] = {k.lower(): pairs.get(k) for k in ("TP", "PP", "CP", "EP")}
    out["grad_accum"] = pairs.get("GA")
    if (gas := _GAS.search(text)) is not None:
        out["grad_accum"] = int(gas.group(1))
    if (local := _LOCAL_BATCH.search(text)) is not None:
        out["micro_batch"] = int(local.group(1))
    fsdp = pairs.get("FSDP")
    out["strategy"] = _strategy(text, fsdp)
    out["dp"] = pairs.get("DP") or _dp(n_devices, out, fsdp)
    if text.strip().lower() == "data-parallel size 1 (per README)".lower():
        out["dp"] = 1
    leftover = _PAIR.sub("", text).strip(" ;,")
    vp = pairs.get("VP")
    out["_note"] = f"parallelism as printed: {text}" if (leftover or vp is not None) else ""
    return out


def _strategy(text: str, fsdp: int | None) -> str | None:
    lowered = text.lower()
    if "zero-1" in lowered:
        return "zero1"
    if "actor on half the nodes" in lowered:
        return None
    if (fsdp is not None and fsdp > 0) or (fsdp is None and lowered.startswith("fsdp")):
        if "async tp" in lowered:
            return "fsdp+async-tp"
        if "vanilla tp" in lowered:
            return "fsdp+tp"
        return "fsdp"
    return None


def _dp(n_devices: int | None, parsed: dict[str, Any], fsdp: int | None) -> int | None:
    if fsdp is not None and fsdp > 1:
        return fsdp
    tp, pp, cp = parsed["tp"], parsed["pp"], parsed["cp"]
    if n_devices is None or tp is None or pp is None or cp is None:
        return None
    width = tp * pp * cp
    return n_devices // width if n_devices % width == 0 else None


def resolve_accelerator_cell(printed: str, facts_name: str) -> tuple[str | None, str]:
    """Canonical id for the printed system (the candidate side of "X vs Y"), falling back to facts' mapping."""
    if printed.strip().lower() in ("", "not stated"):
        return None, ""
    try:
        return _noted(resolve_accelerator_noted(printed.split(" vs ")[0]))
    except UnknownId:
        if facts_name:
            return FACTS_ACCELERATOR_IDS[facts_name], ""
        raise


def _noted(found: tuple[str, str | None]) -> tuple[str | None, str]:
    return found[0], found[1] or ""


def build_result(r: dict[str, str]) -> dict[str, Any]:
    n_devices = to_int(r["n_devices"])
    par = parse_parallelism(r["parallelism"], n_devices) if r["parallelism"] else {}
    acc_id, acc_note = resolve_accelerator_cell(r["system_accelerator"], r["accelerator"])
    metric = Metric(r["metric"])
    value, unit_note = convert_value(metric, float(r["value"]), r["unit"])
    precision = normalize_precision(r["precision"])
    workload = _WORKLOADS[r["workload"]]
    strategy = par.get("strategy")
    baseline = baseline_of(r["notes"]) if metric is Metric.RELATIVE_THROUGHPUT else None
    if metric is Metric.RELATIVE_THROUGHPUT and "TensorRT-LLM" in r["notes"]:
        strategy = "trtllm-rollout"
    note = join_notes(
        r["notes"],
        acc_note,
        f"precision as printed: {r['precision']}" if r["precision"] and normalize_name(r["precision"]) != precision else "",
        f"workload as printed: {r['workload']}" if r["workload"] != workload.value else "",
        par.get("_note", ""),
        f"params as printed: {r['params_b']}B" if r["params_b"] else "",
        unit_note,
        f"as published: {r['metric_as_published']} = {r['value_as_published']} {r['unit_as_published']}",
        f"evidence as published: {r['evidence']}",
    )
    return {
        "source_id": r["source_id"], "accelerator_id": acc_id, "accelerator_as_printed": r["system_accelerator"],
        "n_devices": n_devices, "framework": r["framework"], "framework_version": r["framework_version"],
        "model_id": resolve_model(r["model"]) if r["model"] else None, "model_as_printed": r["model"],
        "workload": workload.value, "precision": precision, "seq_len": to_int(r["seq_len"]),
        "global_batch": to_int(r["global_batch"]),
        "micro_batch": to_int(r["micro_batch"]) if r["micro_batch"] else par.get("micro_batch"),
        "grad_accum": par.get("grad_accum"), "tp": par.get("tp"), "pp": par.get("pp"), "dp": par.get("dp"),
        "ep": par.get("ep"), "cp": par.get("cp"), "strategy": strategy, "sparsity": sparsity_of(r["notes"]),
        "metric": metric.value, "value": value, "unit": metric.unit, "evidence": evidence_of(metric, r),
        "locator": r["locator"], "note": note, "baseline": baseline,
    }


def convert_value(metric: Metric, value: float, unit: str) -> tuple[float, str]:
    if metric is Metric.HFU and unit == "%":
        return round(value / 100, 10), "converted from %"
    if unit == metric.unit:
        return value, ""
    if unit in _UNIT_FIXES:
        factor, note = _UNIT_FIXES[unit]
        return value * factor, note
    raise ValueError(f"no conversion from {unit!r} to {metric.unit!r} for {metric.value}")


def evidence_of(metric: Metric, r: dict[str, str]) -> str:
    estimate = metric.value.startswith("est_") or "An estimate, not a measured run" in r["notes"]
    return (Evidence.EXTRAPOLATED if estimate else Evidence.REPORTED).value


def baseline_of(notes: str) -> str | None:
    found = _BASELINE.search(notes)
    return found.group(1).strip().removesuffix(" = 1.0x") if found else None


def sparsity_of(notes: str) -> float | None:
    found = _SPARSITY.search(notes)
    return float(found.group(1)) if found else None


# --- helpers -------------------------------------------------------------------------------------------------

def to_int(text: str) -> int | None:
    return int(text) if text.strip() else None


def join_notes(*parts: str) -> str:
    return " | ".join(p.strip() for p in parts if p and p.strip())


def read_csv(path: Path) -> Iterator[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        yield from csv.DictReader(f)


def write_csv(path: Path, columns: tuple[str, ...], rows: Iterable[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: _cell(row.get(c)) for c in columns})
            count += 1
    return count


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e18 else repr(value)
    return str(value)


def main(facts: Path) -> None:
    counts = {
        "sources.csv": write_csv(DATA / "sources.csv", SOURCE_COLUMNS, build_sources(facts)),
        "accelerators.csv": write_csv(DATA / "accelerators.csv", ACCELERATOR_COLUMNS, build_accelerators(facts)),
        "models.csv": write_csv(DATA / "models.csv", MODEL_COLUMNS, MODELS),
        "results.csv": write_csv(
            DATA / "results.csv", RESULT_COLUMNS, (build_result(r) for r in read_csv(facts / "results.csv"))
        ),
    }
    for name, n in counts.items():
        print(f"{name}: {n} rows")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/facts"))
