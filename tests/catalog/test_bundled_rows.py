"""The bundled catalog CSVs are well formed: sourced rows, slug ids, unique aliases, positive peaks, consistent shapes.

Read with the csv module only, so these checks hold whatever the store does with the files.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"
_SLUG = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
_PEAKS = ("fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops")
_SHAPE_TOLERANCE = 0.05
_EXPLAINED = "differs from shape formula"


def _rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _alias_key(name: str) -> str:
    """Case, spaces and punctuation ignored, but a decimal point kept: "OPT-1.3B" and "OPT-13B" differ."""
    return "".join(re.findall(r"[a-z0-9]+", re.sub(r"(?<=\d)\.(?=\d)", "p", name.lower())))


def _names(row: dict[str, str]) -> list[str]:
    return [row["id"], *(a.strip() for a in row["aliases"].split("|") if a.strip())]


def _params_from_shape(row: dict[str, str]) -> float | None:
    """Weights of the shape: L*(q,o + k,v + experts*MLP) + embeddings (twice when untied); norms and biases ignored."""
    cols = ("layers", "hidden", "heads", "ffn_hidden", "vocab")
    if not all(row[c] for c in cols):
        return None
    layers, hidden, heads, ffn, vocab = (int(row[c]) for c in cols)
    kv_hidden = hidden * int(row["kv_heads"] or heads) / heads
    matrices = 3 if row["ffn_kind"] == "swiglu" else 2
    experts = int(row["moe_experts"] or 1)
    per_layer = 2 * hidden * hidden + 2 * hidden * kv_hidden + experts * matrices * hidden * ffn
    embeddings = vocab * hidden * (1 if row["tied_embeddings"] == "true" else 2)
    return layers * per_layer + embeddings


@pytest.mark.parametrize("name", ["models.csv", "accelerators.csv"])
def test_every_row_cites_a_source_that_exists(name: str) -> None:
    sources = {row["id"] for row in _rows("sources.csv")}
    missing = [(row["id"], row["source_id"]) for row in _rows(name) if row["source_id"] not in sources]
    assert missing == []


@pytest.mark.parametrize("name", ["models.csv", "accelerators.csv", "sources.csv"])
def test_ids_are_unique(name: str) -> None:
    ids = [row["id"] for row in _rows(name)]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


@pytest.mark.parametrize("name", ["models.csv", "accelerators.csv"])
def test_ids_are_lowercase_slugs(name: str) -> None:
    assert [row["id"] for row in _rows(name) if not _SLUG.match(row["id"])] == []


@pytest.mark.parametrize("name", ["models.csv", "accelerators.csv"])
def test_no_alias_names_two_ids(name: str) -> None:
    owner: dict[str, str] = {}
    clashes = []
    for row in _rows(name):
        for printed in _names(row):
            key = _alias_key(printed)
            if owner.setdefault(key, row["id"]) != row["id"]:
                clashes.append((printed, owner[key], row["id"]))
    assert clashes == []


def test_alias_key_keeps_decimal_points() -> None:
    assert _alias_key("OPT-1.3B") != _alias_key("OPT-13B")
    assert _alias_key("NVIDIA A100-SXM4-80GB") == _alias_key("nvidia a100 sxm4 80gb")


def test_accelerator_peaks_and_sizes_are_positive_where_given() -> None:
    bad = [
        (row["id"], col, row[col])
        for row in _rows("accelerators.csv")
        for col in (*_PEAKS, "memory_gb", "mem_bw_tbps", "tdp_w")
        if row[col] and float(row[col]) <= 0
    ]
    assert bad == []


def test_accelerator_with_a_blank_peak_says_why_in_its_note() -> None:
    silent = [row["id"] for row in _rows("accelerators.csv") if not all(row[c] for c in _PEAKS) and not row["note"]]
    assert silent == []


def test_model_params_agree_with_shape_or_note_explains() -> None:
    unexplained = []
    for row in _rows("models.csv"):
        computed = _params_from_shape(row)
        if computed is None or not row["params"]:
            continue
        gap = computed / float(row["params"]) - 1
        if abs(gap) > _SHAPE_TOLERANCE and _EXPLAINED not in row["note"].lower():
            unexplained.append((row["id"], round(gap, 3)))
    assert unexplained == []


def test_shape_helper_reproduces_llama2_7b() -> None:
    row = next(r for r in _rows("models.csv") if r["id"] == "llama2-7b")
    computed = _params_from_shape(row)
    assert computed is not None and abs(computed / float(row["params"]) - 1) < 0.01


def test_moe_active_params_do_not_exceed_total() -> None:
    over = [
        row["id"]
        for row in _rows("models.csv")
        if row["active_params"] and row["params"] and float(row["active_params"]) > float(row["params"])
    ]
    assert over == []


def test_the_genslm_models_of_emani_et_al_have_their_published_shapes() -> None:
    """genslm_{25M,250M,2.5B,25B}_patric: ramanathanlab/genslm genslm/architectures/neox/*.json (GPT-NeoX)."""
    rows = {r["id"]: r for r in _rows("models.csv") if r["family"] == "genslm"}
    shapes = {k: tuple(int(rows[k][c]) for c in ("layers", "hidden", "heads", "ffn_hidden", "vocab"))
              for k in ("genslm-25m", "genslm-250m", "genslm-2.5b", "genslm-25b")}
    assert shapes == {"genslm-25m": (8, 512, 8, 2048, 69), "genslm-250m": (12, 1840, 16, 2048, 69),
                      "genslm-2.5b": (28, 3840, 32, 4096, 69), "genslm-25b": (64, 8196, 64, 8000, 69)}
    assert {rows[k]["source_id"] for k in shapes} == {"genslm_repo"}
    assert rows["genslm-25m"]["params"] == "25290752" and rows["genslm-2.5b"]["params"] == "2533931008"
    for k in shapes:
        computed = _params_from_shape(rows[k])
        assert computed is not None and abs(computed / float(rows[k]["params"]) - 1) < 0.01


def test_every_stored_peak_has_a_source_the_store_holds() -> None:
    sources = {r["id"] for r in _rows("sources.csv")}
    unsourced = [r["id"] for r in _rows("accelerators.csv")
                 if any(r[p] for p in _PEAKS) and r["source_id"] not in sources]
    assert not unsourced


# The TPUs before Ironwood compute in bf16 (and int8): a Cloud TPU page listing "FP8" at the bf16 rate (v5p) is no
# FP8 mode. Ironwood (tpu-v7) is the first with one, at twice its bf16 peak.
_NO_FP8 = ("tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e")


def test_only_hardware_with_an_fp8_mode_carries_an_fp8_peak() -> None:
    rows = {r["id"]: r for r in _rows("accelerators.csv")}
    assert {i: rows[i]["fp8_tflops"] for i in _NO_FP8 if rows[i]["fp8_tflops"]} == {}
    tpus_with_fp8 = {i: r for i, r in rows.items() if i.startswith("tpu") and r["fp8_tflops"]}
    assert set(tpus_with_fp8) <= {"tpu-v7"}
    assert all(float(r["fp8_tflops"]) == 2 * float(r["bf16_tflops"]) for r in tpus_with_fp8.values())
