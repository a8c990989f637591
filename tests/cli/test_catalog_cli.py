"""python -m perfledger catalog add | link | unlinked, as a user types them, and calc using what was added."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("id,family,name,params,layers,hidden,heads,kv_heads,ffn_hidden,vocab,ffn_kind,seq_len,tied_embeddings,"
          "aliases,note\n"
          "inhouse-7b,inhouse,InHouse-7B,6.7e9,32,4096,32,32,16384,50432,gelu,2048,true,InHouse-7B | ourteam/inhouse-7b,model card\n")


def run_cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return run("perfledger", *args, "--db", f"duckdb:///{db}")


@pytest.fixture
def db(seeded_db_file: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    shutil.copy(seeded_db_file, path)
    return path


def test_a_model_added_with_catalog_add_is_used_by_calc_at_once(db: Path, tmp_path: Path) -> None:
    before = run_cli("calc", "flops_per_token", "model=InHouse-7B", db=db)
    assert before.returncode == 2 and "unknown model 'InHouse-7B'" in before.stderr
    (tmp_path / "models.csv").write_text(MODELS, encoding="utf-8")
    added = run_cli("catalog", "add", str(tmp_path / "models.csv"), db=db)
    assert added.returncode == 0, added.stderr
    assert "models.csv:2: add model inhouse-7b" in added.stdout and "1 model rows added" in added.stdout
    after = run_cli("calc", "model_tflops", "model=ourteam/inhouse-7b", "tokens_per_s_per_device=3000", "--json", db=db)
    assert after.returncode == 0, after.stderr
    figure = json.loads(after.stdout)
    assert figure["inputs"]["model"] == "inhouse-7b" and figure["inputs"]["seq_len"] == 2048
    assert figure["value"] == pytest.approx(3000 * figure["inputs"]["flops_per_token"] / 1e12)


def test_a_dry_run_checks_every_row_and_stores_nothing(db: Path, tmp_path: Path) -> None:
    (tmp_path / "models.csv").write_text(MODELS, encoding="utf-8")
    dry = run_cli("catalog", "add", str(tmp_path / "models.csv"), "--dry-run", db=db)
    assert dry.returncode == 0 and "would add model inhouse-7b" in dry.stdout and "nothing stored" in dry.stderr
    assert run_cli("calc", "flops_per_token", "model=inhouse-7b", db=db).returncode == 2


def test_refused_rows_exit_1_with_file_line_reason_and_nothing_stored(db: Path, tmp_path: Path) -> None:
    path = tmp_path / "accelerators.csv"
    path.write_text("id,vendor,name,unit_basis,bf16_tflops,fp8_tflops\n"
                    "x1,Acme,X1,GPU,100,200\n"
                    "X 2,Acme,X2,GPU,100,200\n"
                    "x3,Acme,X3,GPU,0,\n", encoding="utf-8")
    out = run_cli("catalog", "add", str(path), db=db)
    assert out.returncode == 1
    assert f"{path}:3: id 'X 2' is not a lowercase slug" in out.stderr
    assert f"{path}:4: bf16_tflops must be positive" in out.stderr
    assert "1 accelerator rows valid, 2 refused; nothing stored" in out.stderr
    assert run_cli("calc", "mfu", "model=llama2-7b", "tokens_per_s_per_device=10", "accelerator=x1",
                   "precision=bf16", db=db).returncode == 2


def test_link_names_how_many_stored_rows_it_linked(db: Path, tmp_path: Path) -> None:
    (tmp_path / "models.csv").write_text(MODELS, encoding="utf-8")
    assert run_cli("catalog", "add", str(tmp_path / "models.csv"), db=db).returncode == 0
    out = run_cli("catalog", "link", "InHouse 7B (8k context)", "inhouse-7b", "--all-sources", db=db)
    assert out.returncode == 0, out.stderr
    assert ("linked 0 stored result rows of 0 sources printed 'InHouse 7B (8k context)' to model inhouse-7b; "
            "'InHouse 7B (8k context)' is now an alias of inhouse-7b") in out.stdout
    unknown = run_cli("catalog", "link", "InHouse 7B", "inhouse-77b", db=db)
    assert unknown.returncode == 2 and "inhouse-7b" in unknown.stderr


def test_unlinked_lists_names_with_counts(db: Path) -> None:
    out = run_cli("catalog", "unlinked", db=db)
    assert out.returncode == 0 and "unlinked names" in out.stderr
