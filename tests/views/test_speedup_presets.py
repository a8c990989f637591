"""The Speedups presets are data (data/speedup_presets.csv): read and checked row by row, each bad row refused with
the file, its line and the reason; the page's `p` choices are the file's ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfledger.errors import DataFileError
from perfledger.settings import DEFAULT_DATA_DIR
from perfledger.views import speedup_presets, speedups
from perfledger.views.registry import state_from_query
from perfledger.views.speedup_presets import FILE_NAME, Side, read_presets

BUNDLED = (DEFAULT_DATA_DIR / FILE_NAME).read_text(encoding="utf-8")
NEMO_ROW = BUNDLED.splitlines()[1]


def _file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / FILE_NAME
    path.write_text("\n".join([BUNDLED.splitlines()[0], *rows]) + "\n", encoding="utf-8")
    return path


def test_the_bundled_presets_are_the_pages_choices_in_the_files_order() -> None:
    ids = [p.id for p in speedup_presets.presets()]
    assert ids == ["nemo", "fsdp", "rlhf"]
    assert speedups.SPEEDUP_PRESETS == (*ids, "custom")
    nemo = speedups.PRESETS["nemo"]
    assert (nemo.base, nemo.cand) == (Side("a100-80gb", "nemo"), Side("h200", "nemo"))
    assert nemo.stored == (("accelerator_id", "h200"),) and nemo.source == "nv_blog_nemo_h200_2023"
    assert speedups.PRESET_LABELS["fsdp"] == "FSDP vs 3D"


def test_a_row_added_to_the_file_is_read_as_a_preset(tmp_path: Path) -> None:
    path = _file(tmp_path, NEMO_ROW, "asynctp,Async TP,Async TP vs TP (stored ratios),llama3-8b | llama3-70b,"
                                     "tokens_per_s_per_device,torchtitan_asynctp_h100_2025,,,strategy=fsdp; framework=torchtitan")
    (nemo, asynctp) = read_presets(path)
    assert nemo == speedups.PRESETS["nemo"]
    assert asynctp.models == ("llama3-8b", "llama3-70b") and asynctp.base is None
    assert asynctp.stored == (("strategy", "fsdp"), ("framework", "torchtitan"))


def test_the_p_key_takes_the_files_ids_and_names_them_on_a_wrong_one() -> None:
    assert state_from_query("speedups", {"p": "rlhf"}).preset == "rlhf"
    wrong = state_from_query("speedups", {"p": "bogus"})
    assert wrong.preset == "nemo" and "should be one of nemo, fsdp, rlhf, custom" in " ".join(wrong.problems)


@pytest.mark.parametrize(("row", "reason"), [
    ("Nemo,a,b,llama2-7b,tokens_per_s_per_device,,,,workload=rlhf", "lowercase slug"),
    ("custom,a,b,llama2-7b,tokens_per_s_per_device,,,,workload=rlhf", "other than custom"),
    ("x,,b,llama2-7b,tokens_per_s_per_device,,,,workload=rlhf", "label and title"),
    ("x,a,b,,tokens_per_s_per_device,,,,workload=rlhf", "models must be model ids"),
    ("x,a,b,llama2-7b,vibes_per_s,,,,workload=rlhf", "metric 'vibes_per_s'"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,accelerator=h200,,", "given together"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,gpu=h200,accelerator=a100-80gb,", "base names gpu"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,,,n_devices=8", "not a text column"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,,,strategy", "'strategy' is not name=value"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,,,", "shows nothing"),
    ("x,a,b,llama2-7b,tokens_per_s_per_device,,,", "expected 9 cells"),
    (NEMO_ROW, "already given above"),
])
def test_a_bad_row_is_refused_naming_the_file_line_and_reason(tmp_path: Path, row: str, reason: str) -> None:
    with pytest.raises(DataFileError) as info:
        read_presets(_file(tmp_path, NEMO_ROW, row))
    assert (info.value.file_name, info.value.line) == (FILE_NAME, 3)
    assert reason in info.value.reason
