"""`perfledger audit` prints every claim kind, each figure in its own metric's unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfledger import cli


def audit_output(db_file: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["audit", "--format", fmt, "--db", f"duckdb:///{db_file}"]) == 0
    return capsys.readouterr().out


def test_table_rows_show_their_own_metrics_unit(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(audit_output(seeded_db_file, "json", capsys))
    lines = audit_output(seeded_db_file, "table", capsys).splitlines()
    assert len(lines) == len(rows)
    by_metric: dict[str, str] = {}
    for row, line in zip(rows, lines, strict=True):
        by_metric.setdefault(row["metric"], line)
        if row["metric"] != "model_tflops_per_device":
            assert "TFLOP/s" not in line, line
    assert "TFLOP/s/device" in by_metric["model_tflops_per_device"]
    assert "%" in by_metric["mfu"]
    assert " days" in by_metric["est_days_to_train_10T_tokens_1k_gpus"]
    assert by_metric["relative_throughput"].count("x") >= 2


def test_mfu_line_shows_the_fraction_as_a_percentage(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = audit_output(seeded_db_file, "table", capsys).splitlines()
    gtc = next(line for line in lines if "gtic2023_nvidia_talk: mfu of gpt3-175b" in line)
    assert "reported 50.0%" in gtc


def test_json_lists_time_to_train_and_scaling_claims(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(audit_output(seeded_db_file, "json", capsys))
    metrics = {r["metric"] for r in rows}
    assert {"time_to_train_s", "est_days_to_train_10T_tokens_1k_gpus", "scaling_efficiency",
            "relative_throughput", "mfu", "model_tflops_per_device"} <= metrics
    assert all(r["reason"] for r in rows if r["verdict"] != "consistent")


def test_figure_formats_each_unit() -> None:
    assert cli.figure(0.758, "fraction") == "75.8%"
    assert cli.figure(14.62, "x") == "14.6x"
    assert cli.figure(64800.0, "s") == "64,800.0 s"
    assert cli.figure(float("nan"), "days") == "-"
