"""load_seed on the committed data/ and on corrupt copies of it."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from perfledger.catalog import bundled_catalog
from perfledger.errors import DataFileError
from perfledger.records import ResultRecord
from perfledger.seed import RESULT_COLUMNS, Seed, load_seed

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def seed() -> Seed:
    return load_seed(DATA)


def test_loads_every_published_row_with_no_unresolved_names(seed: Seed) -> None:
    assert len(seed.results) >= 923
    assert seed.unresolved == ()


def test_every_result_source_exists(seed: Seed) -> None:
    source_ids = {s["id"] for s in seed.sources}
    assert {r.source_id for r in seed.results} <= source_ids


def test_every_referenced_accelerator_and_model_exists(seed: Seed) -> None:
    assert {r.accelerator_id for r in seed.results} - {None} <= {a["id"] for a in seed.accelerators}
    assert {r.model_id for r in seed.results} - {None} <= {m["id"] for m in seed.models}


def test_accelerator_and_model_sources_exist(seed: Seed) -> None:
    source_ids = {s["id"] for s in seed.sources}
    assert {a["source_id"] for a in seed.accelerators} - {None} <= source_ids
    assert {m["source_id"] for m in seed.models} - {None} <= source_ids


def test_values_come_back_typed(seed: Seed) -> None:
    h100 = next(a for a in seed.accelerators if a["id"] == "h100-sxm")
    assert h100["bf16_tflops"] == 989.0 and h100["fp8_tflops"] == 1979.0
    mi250 = next(a for a in seed.accelerators if a["id"] == "mi250")
    assert mi250["unit_basis"] == "package" and mi250["devices_per_package"] == 2
    llama = next(m for m in seed.models if m["id"] == "llama2-70b")
    assert (llama["layers"], llama["kv_heads"], llama["tied_embeddings"]) == (80, 8, False)


def _rows(seed: Seed, source: str, metric: str) -> list[ResultRecord]:
    return [r for r in seed.results if r.source_id == source and r.metric == metric]


def test_nemo_h200_vs_a100_rows_are_there(seed: Seed) -> None:
    rows = _rows(seed, "nv_blog_nemo_h200_2023", "tokens_per_s_per_device")
    got = {(r.model_id, r.accelerator_id): r.value for r in rows}
    assert got == {
        ("llama2-7b", "h200"): 16913, ("llama2-7b", "a100-80gb"): 4583,
        ("llama2-13b", "h200"): 9432, ("llama2-13b", "a100-80gb"): 2357,
        ("llama2-70b", "h200"): 1880, ("llama2-70b", "a100-80gb"): 451,
    }
    tflops = {(r.model_id, r.accelerator_id): r.value
              for r in _rows(seed, "nv_blog_nemo_h200_2023", "model_tflops_per_device") if r.n_devices}
    assert tflops == {
        ("llama2-7b", "h200"): 779, ("llama2-7b", "a100-80gb"): 211,
        ("llama2-13b", "h200"): 822, ("llama2-13b", "a100-80gb"): 206,
        ("llama2-70b", "h200"): 836, ("llama2-70b", "a100-80gb"): 201,
    }
    for r in rows:
        assert (r.seq_len, r.global_batch, r.framework, r.precision) == (4096, 128, "NeMo", "unstated")
        assert r.framework_version in ("NeMo 24.01-alpha", "NeMo 23.08")


def test_fsdp_vs_3d_ratios_carry_strategy_and_baseline(seed: Seed) -> None:
    rows = [r for r in _rows(seed, "nv_blog_nemo_h200_2023", "relative_throughput") if r.model_id == "gpt3-20b"]
    assert {r.n_devices: r.value for r in rows} == {8: 0.78, 16: 0.88, 32: 0.89, 64: 0.86, 128: 0.96}
    assert {r.strategy for r in rows} == {"fsdp"}
    assert all(r.baseline and r.baseline.startswith("3D parallelism") for r in rows)


def test_rlhf_tensorrt_llm_ratios_are_distinguishable(seed: Seed) -> None:
    rows = [r for r in _rows(seed, "nv_blog_nemo_h200_2023", "relative_throughput") if r.workload == "rlhf"]
    assert len(rows) == 4
    assert {r.strategy for r in rows} == {"trtllm-rollout"}
    assert all("without TensorRT-LLM" in (r.baseline or "") for r in rows)


def test_emani_scaling_efficiencies_use_canonical_ids(seed: Seed) -> None:
    rows = _rows(seed, "emani2023_llm_accelerators", "scaling_efficiency")
    assert {r.accelerator_id: r.value for r in rows} == {
        "gaudi2": 1.04, "bow-ipu": 1.0, "cs-2": 0.957, "sn30": 0.8, "mi250": 0.8, "a100-40gb": 0.758,
    }
    sparse = [r for r in _rows(seed, "emani2023_llm_accelerators", "relative_throughput") if r.sparsity]
    assert {r.sparsity for r in sparse} == {0.9}


def test_gtic_gpt3_a800_estimate_is_there(seed: Seed) -> None:
    (row,) = _rows(seed, "gtic2023_nvidia_talk", "time_to_train_s")
    assert (row.model_id, row.accelerator_id, row.n_devices) == ("gpt3-175b", "a800-80gb", 1024)
    assert row.value == 24 * 86400 and row.evidence == "extrapolated"


def _copy_data(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    target.mkdir()
    for name in ("sources.csv", "accelerators.csv", "models.csv", "results.csv"):
        shutil.copy(DATA / name, target / name)
    return target


def _replace_line(path: Path, line: int, edit: dict[str, str]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cells = next(csv.reader([lines[line - 1]]))
    for column, value in edit.items():
        cells[header.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    lines[line - 1] = out.getvalue()
    path.write_text("".join(lines), encoding="utf-8")


def test_bad_number_names_file_and_line(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    _replace_line(data / "results.csv", 7, {"value": "12x"})
    with pytest.raises(DataFileError) as info:
        load_seed(data)
    assert (info.value.file_name, info.value.line) == ("results.csv", 7)
    assert "value" in info.value.reason


def test_unknown_metric_is_rejected(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    _replace_line(data / "results.csv", 3, {"metric": "vibes_per_s"})
    with pytest.raises(DataFileError, match=r"results.csv:3: unknown metric"):
        load_seed(data)


def test_unknown_source_reference_is_rejected(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    _replace_line(data / "results.csv", 4, {"source_id": "no_such_source"})
    with pytest.raises(DataFileError, match=r"results.csv:4: unknown source_id"):
        load_seed(data)


def test_a_bad_accelerator_colour_names_file_and_line(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    _replace_line(data / "accelerators.csv", 3, {"colour": "76b900"})
    with pytest.raises(DataFileError, match=r"accelerators.csv:3: colour must be #rrggbb"):
        load_seed(data)


def test_every_bundled_accelerator_has_a_colour_of_its_own(seed: Seed) -> None:
    colours = [a["colour"] for a in seed.accelerators if a["colour"]]
    assert len(colours) >= 25 and len(set(colours)) == len(colours)


def test_wrong_header_is_rejected(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    text = (data / "models.csv").read_text(encoding="utf-8").replace("kv_heads", "kvheads", 1)
    (data / "models.csv").write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError, match=r"models.csv:1: header"):
        load_seed(data)


def test_unresolvable_names_are_kept_and_listed(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    _replace_line(data / "results.csv", 5, {"accelerator_id": "", "accelerator_as_printed": "Quantum Abacus 9000"})
    seed = load_seed(data)
    assert len(seed.results) == 923
    (missing,) = seed.unresolved
    assert (missing.line, missing.kind, missing.name) == (5, "accelerator", "Quantum Abacus 9000")
    assert len(missing.nearest) == 3
    assert seed.results[3].accelerator_id is None


def test_results_header_matches_the_result_table() -> None:
    header = (DATA / "results.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert tuple(header) == RESULT_COLUMNS


def test_the_bundled_catalog_is_the_seeds_catalog_rows(seed: Seed) -> None:
    catalog = bundled_catalog()
    assert {a["id"] for a in seed.accelerators} == set(catalog.accelerators)
    assert {m["id"] for m in seed.models} == set(catalog.models)
