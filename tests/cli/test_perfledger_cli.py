"""python -m perfledger as a user types it: the figures, the formula, the inputs, and plain errors.

Commands are answered by perfledger.cli.main in this process (tests/cli_runner.py); the first test runs
`python -m perfledger` as a process, as typed, and finds it prints what the in-process call prints."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import run

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return run("perfledger", *args, "--db", f"duckdb:///{db}")


@pytest.mark.parametrize("args", [
    ("calc", "model_tflops", "model=llama2-70b", "seq_len=4096", "tokens_per_s_per_device=1880"),  # exit 0
    ("calc", "speedup", "candidate=3"),  # exit 2, one sentence on stderr
])
def test_python_m_perfledger_as_typed_prints_what_its_main_prints(seeded_db_file: Path, args: tuple[str, ...]) -> None:
    typed = subprocess.run([sys.executable, "-m", "perfledger", *args, "--db", f"duckdb:///{seeded_db_file}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    answered = run_cli(*args, db=seeded_db_file)
    assert (typed.returncode, typed.stdout, typed.stderr) == (answered.returncode, answered.stdout, answered.stderr)
    assert typed.stdout if typed.returncode == 0 else typed.stderr.startswith("error: ")


@pytest.mark.parametrize(("args", "value", "unit"), [
    (("model_tflops", "model=llama2-70b", "seq_len=4096", "tokens_per_s_per_device=1880"), 835.6, "TFLOP/s/device"),
    (("mfu", "model=llama2-70b", "seq_len=4096", "tokens_per_s_per_device=1880", "accelerator=h200",
      "precision=bf16"), 0.845, "fraction"),
    (("speedup", "candidate=16913", "baseline=4583"), 3.69, "x"),
    (("time_to_train", "model=llama2-70b", "tokens=1e9", "devices=8", "tokens_per_s_per_device=1880"), 66489, "s"),
    (("time_to_train", "model=gpt3-175b", "tokens=300e9", "devices=1024", "accelerator=a800-80gb",
      "precision=fp16", "efficiency=0.5"), 2.02e6, "s"),
])
def test_calc_commands_from_the_issue_print_value_unit_formula_inputs(seeded_db_file: Path, args: tuple[str, ...],
                                                                      value: float, unit: str) -> None:
    out = run_cli("calc", *args, "--json", db=seeded_db_file)
    assert out.returncode == 0, out.stderr
    figure = json.loads(out.stdout)
    assert figure["value"] == pytest.approx(value, rel=0.005)
    assert figure["unit"] == unit
    assert "=" in figure["formula"] and figure["inputs"]


@pytest.mark.parametrize(("args", "message"), [
    (("calc", "mfu", "model=llama2-69b", "seq_len=4096", "tokens_per_s_per_device=1", "accelerator=h200",
      "precision=bf16"), "unknown model 'llama2-69b'; nearest: llama2-70b"),  # by meaning: llama9 has no near model
    (("calc", "speedup", "candidate=0", "baseline=4583"), "candidate must be positive"),
    (("calc", "speedup", "candidate=3"), "speedup needs baseline=<number>"),
    (("calc", "mfu", "model=llama2-7b", "seq_len=4096", "tokens_per_s_per_device=1", "accelerator=h2000",
      "precision=bf16"), "unknown accelerator 'h2000'; nearest:"),
    # the page warns that it ignores an unknown key; the export had printed the default view with exit 0
    (("export", "accelerators", "models=llama2-7b"), "would ignore part of this query (ignored unknown link parameter"),
    (("export", "time-to-train", "n=0"), "would ignore part of this query"),
])
def test_bad_input_gets_a_plain_message_and_exit_2(seeded_db_file: Path, args: tuple[str, ...], message: str) -> None:
    out = run_cli(*args, db=seeded_db_file)
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and message in out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1 and not out.stdout


def test_audit_json_lists_every_claim_with_verdict(seeded_db_file: Path) -> None:
    out = run("perfledger", "audit", "--format", "json", "--db", f"duckdb:///{seeded_db_file}")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {"reported", "recomputed", "rel_diff", "tolerance", "verdict"} <= set(rows[0])


def test_corrupt_data_csv_is_reported_with_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("sources.csv", "accelerators.csv", "models.csv", "results.csv"):
        (data / name).write_bytes((ROOT / "data" / name).read_bytes())
    with (data / "results.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows[3][rows[0].index("value")] = "seven"  # line 4 of the file
    with (data / "results.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    out = run("perfledger", "init", "--data", str(data), "--db", f"duckdb:///{tmp_path / 'x.duckdb'}")
    assert out.returncode == 1
    assert "results.csv:4" in out.stderr and "Traceback" not in out.stderr


def test_init_loads_the_demo_logs_through_python_m_ingest_once(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    first = run_cli("init", db=db)
    assert first.returncode == 0, first.stderr
    assert "demo runs from" in first.stdout
    again = run_cli("init", db=db)
    assert again.returncode == 0 and "demo runs" not in again.stdout  # same bytes, same runs


def test_the_core_library_never_imports_ingest_or_streamlit() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "perfledger").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if line.lstrip().startswith(("import ingest", "from ingest", "import streamlit", "from streamlit"))]
    assert found == []
