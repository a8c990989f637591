"""A framework becomes readable by data rows alone: a real log of a framework whose rows are taken out of the data
folder is read without their meaning, and reads right once the rows are added back with `python -m perfledger keys
add FILE.csv` (key spellings, a framework row, configuration keys): no code."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from ingest.pipeline import preview
from perfledger import cli
from perfledger.settings import DEFAULT_DATA_DIR
from tests.conftest import LOGS


def data_without(tmp_path: Path, file: str, framework: str, key: str | None = None) -> tuple[Path, str]:
    """A copy of the data folder without `framework`'s rows (of `key`, when given) in `file`; the rows taken out, as
    CSV with the header."""
    data = tmp_path / "data"
    if not data.exists():
        shutil.copytree(DEFAULT_DATA_DIR, data, ignore=shutil.ignore_patterns("*.duckdb*", "logs"))
    rows = list(csv.reader(io.StringIO((data / file).read_text(encoding="utf-8"))))

    def taken_out(row: list[str]) -> bool:
        return row[0] == framework and (key is None or row[1] == key)

    kept = [rows[0], *(r for r in rows[1:] if not taken_out(r))]
    taken = [rows[0], *(r for r in rows[1:] if taken_out(r))]
    assert len(taken) > 1
    (data / file).write_text(_csv(kept), encoding="utf-8")
    return data, _csv(taken)


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def test_nemo_automodel_rows_added_as_data_read_its_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = LOGS / "nemo_automodel_llama3_1_8b_hellaswag_pp_h100.jsonl"
    data, rows = data_without(tmp_path, "metric_keys.csv", "nemo-automodel")
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    before = preview(log.read_bytes(), log.name).summary
    assert before.tokens_per_s_per_device is None  # `tps`, `num_tokens_per_step`: no meaning without its rows
    (tmp_path / "automodel.csv").write_text(rows, encoding="utf-8")
    assert cli.main(["keys", "add", str(tmp_path / "automodel.csv")]) == 0
    after = preview(log.read_bytes(), log.name).summary
    assert after.config["framework"] == "nemo-automodel" and after.config["n_devices"] == 4
    assert after.tokens_per_s_per_device == pytest.approx(4703.6, rel=0.01)
    assert after.steady is not None and after.steady.step_time_s_median == pytest.approx(1.092, rel=0.002)


def test_a_framework_row_added_as_data_states_the_workload_of_its_runs(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    log = LOGS / "verl_ppo_dp2_gpu_per_step_parsed.csv"
    data, rows = data_without(tmp_path, "frameworks.csv", "verl")
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    before = preview(log.read_bytes(), log.name).summary
    assert before.identity["workload"]["from"] == "default"
    (tmp_path / "verl.csv").write_text(rows, encoding="utf-8")
    assert cli.main(["keys", "add", str(tmp_path / "verl.csv"), "--dry-run"]) == 0
    assert preview(log.read_bytes(), log.name).summary.identity["workload"]["from"] == "default"  # nothing written
    assert cli.main(["keys", "add", str(tmp_path / "verl.csv")]) == 0
    after = preview(log.read_bytes(), log.name).summary
    assert after.config["workload"] == "rlhf" and after.identity["workload"]["from"] == "log"
    assert after.flops_formula is None or "RL" in " ".join(after.warnings)


def test_a_configuration_key_added_as_data_counts_the_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Supermicro MLPerf result names its 8 ranks only in Gloo's connection lines (`1xMI355X` says no count)."""
    log = LOGS / "supermicro_8xmi355x_llama2_70b_lora_v5.1_result_0.txt"
    data, rows = data_without(tmp_path, "config_keys.csv", "*", r"re:Rank \d+ is connected to (\d+) peer ranks")
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    assert preview(log.read_bytes(), log.name).summary.config.get("n_devices") is None
    (tmp_path / "gloo.csv").write_text(rows, encoding="utf-8")
    assert cli.main(["keys", "add", str(tmp_path / "gloo.csv")]) == 0
    after = preview(log.read_bytes(), log.name).summary
    assert after.config["n_devices"] == 8 and after.identity["n_devices"]["where"].startswith("counted: line 3")


@pytest.mark.parametrize(("file", "row", "said"), [
    ("frameworks.csv", "framework,grammar,recognise,line_prefix,workload,note\nmine,key_value,(unclosed,,,\n",
     ("bad.csv:2: recognise '(unclosed' is not a regular expression",)),
    # a look-ahead compiled in Python and was stored; then every ingest failed in Polars' search of the lines
    ("config_keys.csv", 'framework,key,field,unit,value,note\n*,"re:trainable%: (?!100)\\d",workload,flag,lora_finetune,\n',
     ("bad.csv:2: key 'trainable%", "not a regular expression both Python and Polars read (error: look-around")),
])
def test_a_bad_row_is_refused_with_its_line_and_reason_and_nothing_is_written(
        file: str, row: str, said: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(DEFAULT_DATA_DIR, data, ignore=shutil.ignore_patterns("*.duckdb*", "logs"))
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    before = (data / file).read_text(encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text(row)
    assert cli.main(["keys", "add", str(bad)]) == 1
    err = capsys.readouterr().err
    assert all(part in err for part in said), err
    assert (data / file).read_text(encoding="utf-8") == before
