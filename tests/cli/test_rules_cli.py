"""python -m perfledger catalog rules add | list: MLCommons' scoring rules are data a user extends, each row
checked on its own, and a rule added is the one a campaign of that benchmark is scored by."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from perfledger.calc.repeats import olympic_score
from perfledger.cli import main
from perfledger.mlperf_rules import FILE_NAME, HEADER, rule_for

ROOT = Path(__file__).resolve().parents[2]
HEAD = ",".join(HEADER) + "\n"
NEW_RULE = "retinanet_v2,Object detection (a benchmark no code names),5,1,1,a rules page,section 4\n"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(ROOT / "data" / FILE_NAME, folder / FILE_NAME)
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(folder))
    return folder


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_rule_added_scores_a_benchmark_no_code_names(data_dir: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert rule_for("retinanet_v2", data_dir) is None
    assert main(["catalog", "rules", "add", str(write(tmp_path, HEAD + NEW_RULE))]) == 0
    assert "added to" in capsys.readouterr().out
    rule = rule_for("retinanet_v2", data_dir)
    assert rule is not None and (rule.runs, rule.dropped_each_end) == (5, 1)
    assert olympic_score([5.0, 1.0, 3.0, 4.0, 2.0], rule).value == 3.0
    assert main(["catalog", "rules", "list"]) == 0
    assert "retinanet_v2" in capsys.readouterr().out


def test_each_refused_row_is_one_sentence_with_its_line_and_nothing_is_written(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (data_dir / FILE_NAME).read_bytes()
    rows = [NEW_RULE,
            "bad name,Has a space,5,1,1,src,loc\n",
            "x_runs,Too few runs,2,1,1,src,loc\n",
            "x_text,Runs as text,ten,1,1,src,loc\n",
            "x_nosource,No source,5,1,1,,\n",
            "x_short,Too few fields,5\n",
            "llama2_70b_lora,Already in the table,10,1,1,src,loc\n",
            "retinanet_v2,Twice in the file,5,1,1,src,loc\n"]
    path = write(tmp_path, HEAD + "".join(rows))
    assert main(["catalog", "rules", "add", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    refused = [line for line in err if re.match(rf"{re.escape(str(path))}:\d+: ", line)]
    assert [line.split(":")[1] for line in refused] == ["3", "4", "5", "6", "7", "8", "9"]
    assert all(line.count("\n") == 0 and len(line.split(": ", 1)[1]) > 10 for line in refused)
    assert "already in" in refused[5] and "already on line 2" in refused[6]
    assert (data_dir / FILE_NAME).read_bytes() == before


def test_a_dry_run_checks_and_writes_nothing(data_dir: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = (data_dir / FILE_NAME).read_bytes()
    assert main(["catalog", "rules", "add", str(write(tmp_path, HEAD + NEW_RULE)), "--dry-run"]) == 0
    assert "would add retinanet_v2" in capsys.readouterr().out
    assert (data_dir / FILE_NAME).read_bytes() == before


def test_a_file_with_another_header_is_refused_whole(data_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "rules", "add", str(write(tmp_path, "benchmark,runs\nx,5\n"))]) == 1
    assert ":1: the header must be benchmark,problem,runs" in capsys.readouterr().err
